package weir

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"
)

// IntervalJoin joins two keyed event-time streams on key and time, as
// Flink's a.intervalJoin(b).between(lower, upper): it emits join(x, y)
// for every x of a and y of b with equal keys and
//
//	x.ts + lower ≤ y.ts ≤ x.ts + upper   (both bounds inclusive)
//
// The result carries the later of the two timestamps, max(x.ts, y.ts).
// Each side's records wait in keyed map state, bucketed by timestamp,
// until the watermark passes the last time a partner could still arrive
// (x until x.ts + max(upper, 0), y until y.ts + max(−lower, 0)); an
// event-time timer then removes them, so the state stays bounded by the
// interval and the out-of-orderness.
//
// A record at or behind the operator's watermark (the minimum over both
// inputs) is late: the watermark said no such record would come, and its
// partners may already be gone. It is dropped and counted in
// numLateRecordsDropped. (Flink drops records strictly behind the
// watermark; weir's watermark t promises no record at t either, so this
// is the same rule one millisecond stricter, and keeps the cleanup exact.)
//
// Both inputs must carry timestamps (a WatermarkStrategy upstream), lower
// ≤ upper, and both whole milliseconds; otherwise the job fails to build.
func IntervalJoin[K comparable, A, B, OUT any](a Keyed[K, A], b Keyed[K, B], lower, upper time.Duration, join func(A, B) OUT) Stream[OUT] {
	const name = "IntervalJoin"
	lo, hi, err := intervalBounds(name, lower, upper)
	if err == nil {
		err = requireTimed(name, a.s, b.s)
	}
	if err != nil {
		a.s.env.fail(err)
	}
	return coProcess(ConnectKeyed(a, b), name, func() KeyedCoProcessFunction[K, A, B, OUT] {
		return &intervalJoinFunc[K, A, B, OUT]{lower: lo, upper: hi, join: join}
	}).Declare(MapStateOf[int64, []A]("interval-join-left"), MapStateOf[int64, []B]("interval-join-right"))
}

func intervalBounds(where string, lower, upper time.Duration) (lo, hi int64, err error) {
	if lo, err = millis(where+" lower bound", lower); err != nil {
		return 0, 0, err
	}
	if hi, err = millis(where+" upper bound", upper); err != nil {
		return 0, 0, err
	}
	if lo > hi {
		return 0, 0, fmt.Errorf("%s: lower bound %v is above the upper bound %v: want lower ≤ upper", where, lower, upper)
	}
	return lo, hi, nil
}

// requireTimed fails unless every input's records carry timestamps.
func requireTimed(where string, inputs ...interface{ timed() (bool, string) }) error {
	for _, in := range inputs {
		if ok, name := in.timed(); !ok {
			return fmt.Errorf("%s: input %q carries no timestamps: an event-time join needs them on both inputs: add a WatermarkStrategy upstream (FromSourceWithWatermarks or AssignTimestampsAndWatermarks)", where, name)
		}
	}
	return nil
}

func (s Stream[T]) timed() (bool, string) { return s.node.Timed, s.node.Name }

// intervalJoinFunc is the interval join's co-process function.
type intervalJoinFunc[K comparable, A, B, OUT any] struct {
	lower, upper int64 // ms
	join         func(A, B) OUT
	left         MapState[int64, []A] // first input by timestamp
	right        MapState[int64, []B] // second input by timestamp
	name         string
	late         *atomic.Int64
}

func (f *intervalJoinFunc[K, A, B, OUT]) Open(_ context.Context, kc *KeyedContext[K]) error {
	var err error
	if f.left, err = GetMapState[int64, []A](kc, "interval-join-left"); err != nil {
		return err
	}
	if f.right, err = GetMapState[int64, []B](kc, "interval-join-right"); err != nil {
		return err
	}
	f.name, f.late = kc.oc.Name, kc.oc.LateRecordsDropped
	return nil
}

// keepLeft and keepRight are how long after its timestamp a record of
// each side can still meet a partner: a y that joins x has y.ts ≤ x.ts +
// upper, an x that joins y has x.ts ≤ y.ts − lower.
func (f *intervalJoinFunc[K, A, B, OUT]) keepLeft() int64  { return max(f.upper, 0) }
func (f *intervalJoinFunc[K, A, B, OUT]) keepRight() int64 { return max(-f.lower, 0) }

// arrive checks the timestamp of a record and tells whether it is late;
// bad is the record's error (no timestamp, overflow), nil for a good one.
// It takes no record so that the hot path boxes none: the caller formats
// the error.
func (f *intervalJoinFunc[K, A, B, OUT]) arrive(kc *KeyedContext[K], keep int64) (ts int64, late bool, bad error) {
	ts, ok := kc.Timestamp()
	if !ok {
		return 0, false, errNoJoinTimestamp
	}
	if ts > math.MaxInt64-keep {
		return 0, false, errJoinOverflow
	}
	if ts <= kc.CurrentWatermark() {
		if f.late != nil {
			f.late.Add(1)
		}
		return ts, true, nil
	}
	return ts, false, nil
}

var (
	errNoJoinTimestamp = errors.New("the record has no timestamp: both inputs need a WatermarkStrategy upstream that assigns every record one")
	errJoinOverflow    = errors.New("its timestamp plus the join's bound overflows int64")
)

func (f *intervalJoinFunc[K, A, B, OUT]) recordError(v any, err error) error {
	return fmt.Errorf("interval join %q: record %v: %w", f.name, v, err)
}

func (f *intervalJoinFunc[K, A, B, OUT]) ProcessElement1(x A, kc *KeyedContext[K], out *Collector[OUT]) error {
	ts, late, bad := f.arrive(kc, f.keepLeft())
	if bad != nil {
		return f.recordError(x, bad)
	}
	if late {
		return nil
	}
	xs, _ := f.left.Get(ts)
	f.left.Put(ts, append(xs[:len(xs):len(xs)], x)) // a copy: the stored slice may be in a snapshot
	for t, ys := range f.right.All() {
		if t < ts+f.lower || t > ts+f.upper {
			continue
		}
		out.cur = max(ts, t)
		for _, y := range ys {
			out.Collect(f.join(x, y))
		}
	}
	kc.RegisterEventTimeTimer(ts + f.keepLeft())
	return nil
}

func (f *intervalJoinFunc[K, A, B, OUT]) ProcessElement2(y B, kc *KeyedContext[K], out *Collector[OUT]) error {
	ts, late, bad := f.arrive(kc, f.keepRight())
	if bad != nil {
		return f.recordError(y, bad)
	}
	if late {
		return nil
	}
	ys, _ := f.right.Get(ts)
	f.right.Put(ts, append(ys[:len(ys):len(ys)], y))
	for t, xs := range f.left.All() {
		if ts < t+f.lower || ts > t+f.upper {
			continue
		}
		out.cur = max(ts, t)
		for _, x := range xs {
			out.Collect(f.join(x, y))
		}
	}
	kc.RegisterEventTimeTimer(ts + f.keepRight())
	return nil
}

// OnTimer removes the records whose time to meet a partner ended at ts:
// every record registered its cleanup timer at its timestamp plus its
// side's keep, so one timer at ts cleans exactly those two buckets.
func (f *intervalJoinFunc[K, A, B, OUT]) OnTimer(ts int64, kc *KeyedContext[K], _ *Collector[OUT]) error {
	if kc.TimeDomain() != EventTime {
		return nil
	}
	f.left.Remove(ts - f.keepLeft())
	f.right.Remove(ts - f.keepRight())
	return nil
}
