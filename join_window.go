package weir

import "context"

// JoinWindow joins two keyed streams window by window, as Flink's
// a.join(b).where(ka).equalTo(kb).window(assigner).apply(join): when a
// window of a key fires it emits join(x, y) for every pair of a record x
// of a and a record y of b of that key in the window (an inner join: a
// window with records on one side only emits nothing). Tumbling, sliding
// and session assigners work, in event or processing time; a sliding
// window pairs the records of each window it contains, so a pair can be
// emitted once per window holding both. The results carry the window's
// MaxTimestamp.
//
// It is the window operator with both inputs connected into one tagged
// union per record: a window's state is the list of both sides' records
// in keyed state, its timers are the key's timers, so the join is
// checkpointed, restored and rescaled like any window. Records late for
// every window they belong to are dropped and counted in
// numLateRecordsDropped. Event-time windows need timestamps on both
// inputs (a WatermarkStrategy upstream); without them the job fails to
// build.
func JoinWindow[K comparable, A, B, OUT any](a Keyed[K, A], b Keyed[K, B], assigner WindowAssigner, join func(A, B) OUT) Stream[OUT] {
	const name = "JoinWindow"
	r, err := WindowedStream[K, A]{k: a, assigner: assigner}.rules(name)
	if err == nil && r.Assigner().IsEventTime() {
		err = requireTimed(name, a.s, b.s)
	}
	if err != nil {
		a.s.env.fail(err)
	}
	return coProcess(ConnectKeyed(a, b), name, func() KeyedCoProcessFunction[K, A, B, OUT] {
		var xs []A
		var ys []B
		fns := windowFns[K, joinItem[A, B], []joinItem[A, B], OUT]{
			add:   func(v joinItem[A, B], acc []joinItem[A, B], _ bool) []joinItem[A, B] { return append(acc, v) },
			merge: func(p, q []joinItem[A, B]) []joinItem[A, B] { return append(p[:len(p):len(p)], q...) },
			emit: func(_ K, _ *WindowContext, acc []joinItem[A, B], out *Collector[OUT]) error {
				xs, ys = xs[:0], ys[:0]
				for _, it := range acc {
					if it.Second {
						ys = append(ys, it.B)
					} else {
						xs = append(xs, it.A)
					}
				}
				for _, x := range xs {
					for _, y := range ys {
						out.Collect(join(x, y))
					}
				}
				clear(xs)
				clear(ys)
				return nil
			},
		}
		return &windowJoinFunc[K, A, B, OUT]{w: &windowFunc[K, joinItem[A, B], []joinItem[A, B], OUT]{rules: r, fns: fns}}
	})
}

// joinItem is a record of either input of a window join, as the window
// keeps it: Second tells which side it came from.
type joinItem[A, B any] struct {
	Second bool
	A      A
	B      B
}

// windowJoinFunc feeds both inputs of a window join into one window
// function.
type windowJoinFunc[K comparable, A, B, OUT any] struct {
	w *windowFunc[K, joinItem[A, B], []joinItem[A, B], OUT]
}

func (f *windowJoinFunc[K, A, B, OUT]) Open(ctx context.Context, kc *KeyedContext[K]) error {
	return f.w.Open(ctx, kc)
}

func (f *windowJoinFunc[K, A, B, OUT]) ProcessElement1(x A, kc *KeyedContext[K], out *Collector[OUT]) error {
	return f.w.ProcessElement(joinItem[A, B]{A: x}, kc, out)
}

func (f *windowJoinFunc[K, A, B, OUT]) ProcessElement2(y B, kc *KeyedContext[K], out *Collector[OUT]) error {
	return f.w.ProcessElement(joinItem[A, B]{Second: true, B: y}, kc, out)
}

func (f *windowJoinFunc[K, A, B, OUT]) OnTimer(ts int64, kc *KeyedContext[K], out *Collector[OUT]) error {
	return f.w.OnTimer(ts, kc, out)
}
