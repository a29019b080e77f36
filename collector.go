package weir

// Collector gathers the records a function emits. Collect appends to a
// buffer the engine reuses batch after batch: no allocation per record once
// the buffer has grown. On a stream with event timestamps each collected
// record gets the timestamp of the record (or event-time timer) being
// processed, as in Flink.
type Collector[T any] struct {
	buf   []T
	ts    []int64 // the records' timestamps, when timed
	timed bool
	cur   int64 // the timestamp Collect gives
	sides *sideOutputs
}

// Collect emits v.
func (c *Collector[T]) Collect(v T) {
	c.buf = append(c.buf, v)
	if c.timed {
		c.ts = append(c.ts, c.cur)
	}
}

// reset empties the collector for the next batch; timed says whether the
// records collected next carry timestamps.
func (c *Collector[T]) reset(timed bool) {
	clear(c.buf)
	c.buf = c.buf[:0]
	c.ts = c.ts[:0]
	c.timed = timed
}

// times returns the collected records' timestamps, nil when untimed.
func (c *Collector[T]) times() []int64 {
	if !c.timed {
		return nil
	}
	return c.ts
}
