package weir

// Collector gathers the records a function emits. Collect appends to a
// buffer the engine reuses batch after batch: no allocation per record once
// the buffer has grown.
type Collector[T any] struct {
	buf []T
}

// Collect emits v.
func (c *Collector[T]) Collect(v T) { c.buf = append(c.buf, v) }

func (c *Collector[T]) reset() { clear(c.buf); c.buf = c.buf[:0] }
