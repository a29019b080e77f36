package bench

// Load for the checkpoint-mode benches: a rate-limited source that ends
// after a duration, a pacer that holds a stage to a rate by sleeping, and
// CPU work calibrated to a per-record cost.

import (
	"context"
	"io"
	"time"

	"github.com/weirstream/weir"
)

// loadRecord is the benches' record: a key, a sequence number and a
// payload, about 40 bytes encoded.
type loadRecord struct {
	Key     int64
	Seq     int64
	Payload [24]byte
}

// timedSource emits records with keys 0..keys-1 for duration, at most rate
// records per second per subtask (0: as fast as the pipeline takes them),
// then ends. Its position is not checkpointed: the benches never restore.
type timedSource struct {
	rate     float64
	keys     int64
	duration time.Duration

	start time.Time
	seq   int64
}

func (s *timedSource) Open(context.Context, *weir.RuntimeContext) error { return nil }

func (s *timedSource) Read(ctx context.Context, dst []loadRecord, max int) ([]loadRecord, error) {
	now := time.Now()
	if s.start.IsZero() {
		s.start = now
	}
	if now.Sub(s.start) >= s.duration {
		return dst, io.EOF
	}
	n := max
	if s.rate > 0 {
		due := int64(now.Sub(s.start).Seconds()*s.rate) - s.seq
		if due <= 0 {
			// Wait for the next record, a fraction of a millisecond at
			// the benches' rates: Read must return promptly.
			time.Sleep(time.Duration(float64(time.Second) / s.rate))
			return dst, nil
		}
		n = int(min(int64(max), due))
	}
	for range n {
		dst = append(dst, loadRecord{Key: s.seq % s.keys, Seq: s.seq})
		s.seq++
	}
	return dst, nil
}

func (s *timedSource) SnapshotState(int64) error   { return nil }
func (s *timedSource) Close(context.Context) error { return nil }

// pacer holds a stage to rate records per second by sleeping every few
// records. After an idle spell it does not burst to catch up: it owes at
// most one batch.
type pacer struct {
	rate  float64
	slack int64 // records it may run ahead of the clock

	start time.Time
	n     int64
}

func (p *pacer) tick() {
	p.n++
	if p.n%16 != 0 {
		return
	}
	now := time.Now()
	if p.start.IsZero() {
		p.start, p.n = now, 0
		return
	}
	due := p.start.Add(time.Duration(float64(p.n) / p.rate * float64(time.Second)))
	if d := due.Sub(now); d > 0 {
		time.Sleep(d)
	} else if -d > time.Duration(float64(p.slack)/p.rate*float64(time.Second)) {
		p.start, p.n = now, 0 // behind: start over rather than burst
	}
}

// burner does CPU work, calibrated to a number of nanoseconds per call.
type burner struct {
	perNano float64 // spin iterations per nanosecond
	sink    uint64
}

// calibrateBurner measures the spin loop on this machine.
func calibrateBurner() *burner {
	b := &burner{}
	const probe = 5_000_000
	best := time.Duration(1 << 62)
	for range 3 {
		t0 := time.Now()
		b.spin(probe)
		best = min(best, time.Since(t0))
	}
	b.perNano = probe / float64(best.Nanoseconds())
	return b
}

// iterations is the spin count for d of work.
func (b *burner) iterations(d time.Duration) int {
	return max(1, int(b.perNano*float64(d.Nanoseconds())))
}

// spin runs n rounds of an xorshift the compiler cannot drop.
func (b *burner) spin(n int) {
	x := b.sink | 1
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	b.sink = x
}

// discard is a sink that drops everything.
type discard[T any] struct{}

func (discard[T]) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (discard[T]) Write(context.Context, []T) error                 { return nil }
func (discard[T]) Flush(context.Context) error                      { return nil }
func (discard[T]) Close(context.Context) error                      { return nil }

// keyedCount counts records per key in keyed state, optionally doing
// iters rounds of CPU work per record first. It emits nothing.
type keyedCount struct {
	burn  *burner
	iters int
	count weir.ValueState[int64]
}

func (k *keyedCount) Open(ctx context.Context, kc *weir.KeyedContext[int64]) (err error) {
	k.count, err = weir.GetValueState[int64](kc, "count")
	return err
}

func (k *keyedCount) ProcessElement(_ loadRecord, _ *weir.KeyedContext[int64], _ *weir.Collector[loadRecord]) error {
	if k.burn != nil {
		k.burn.spin(k.iters)
	}
	c, _ := k.count.Value()
	k.count.Update(c + 1)
	return nil
}

func recordKey(r loadRecord) int64 { return r.Key }
