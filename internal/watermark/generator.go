package watermark

import (
	"fmt"
	"math"
)

// Generator turns the timestamps of one split's records into that split's
// watermark. It sees timestamps only: the source operator extracts them
// from its records, so a generator needs no record type and the core that
// holds it stays generic. User-defined generators (the public API's
// custom watermark strategies) have the same two methods.
//
// A Generator is a value-returning state machine: OnEvent updates it,
// OnPeriodicEmit reports what it would emit now. It reads no clock; the
// caller decides when the period is over (Source.Tick).
type Generator interface {
	// OnEvent is called with the timestamp of each record of the split,
	// in the order they were read. It must not allocate: it runs per
	// record.
	OnEvent(ts int64)
	// OnPeriodicEmit returns the watermark the split has reached, with
	// ok false when the generator has nothing to say this period (then
	// the split keeps its previous watermark). A watermark below an
	// earlier one is ignored by the caller, so a generator need not
	// guard against regressing.
	OnPeriodicEmit() (wm int64, ok bool)
}

// Bounded is the generator of bounded out-of-orderness: it expects every
// record to be at most Bound ms older than the newest one seen before it,
// so after a record at ts no record at or below ts - Bound - 1 can follow.
// The watermark is therefore the largest timestamp seen minus Bound minus
// 1 ms, as Flink's BoundedOutOfOrdernessWatermarks (a watermark W promises
// no more records with ts <= W, hence the -1: a record exactly Bound
// behind the maximum is still on time).
//
// Only the largest timestamp matters, so a caller may pass just the
// maximum of a batch (Source.RecordsMax).
type Bounded struct {
	bound int64
	maxTS int64 // MinWatermark until the first record
}

// BoundedOutOfOrderness returns the generator for records that arrive at
// most bound ms out of order. It panics on a negative bound: the public
// API validates the user's value first and reports it as an error.
func BoundedOutOfOrderness(bound int64) *Bounded {
	if bound < 0 {
		panic(fmt.Sprintf("watermark: out-of-orderness bound %d ms is negative; use 0 (Monotonous) or more", bound))
	}
	return &Bounded{bound: bound, maxTS: MinWatermark}
}

// Monotonous returns the generator for timestamps that never decrease:
// bounded out-of-orderness with bound 0, so the watermark trails the
// largest timestamp by 1 ms.
func Monotonous() *Bounded { return BoundedOutOfOrderness(0) }

// OnEvent records ts if it is the largest so far.
func (b *Bounded) OnEvent(ts int64) {
	if ts > b.maxTS {
		b.maxTS = ts
	}
}

// OnPeriodicEmit returns the largest timestamp minus the bound minus 1,
// or MinWatermark before any record. It saturates at MinWatermark instead
// of wrapping: timestamps within bound+1 of math.MinInt64 would otherwise
// overflow to a huge watermark that fires every timer.
func (b *Bounded) OnPeriodicEmit() (int64, bool) {
	// math.MinInt64 + bound + 1 cannot overflow: 0 <= bound <= MaxInt64.
	if b.maxTS < math.MinInt64+b.bound+1 {
		return MinWatermark, true
	}
	return b.maxTS - b.bound - 1, true
}

// Bound returns the out-of-orderness bound in ms.
func (b *Bounded) Bound() int64 { return b.bound }
