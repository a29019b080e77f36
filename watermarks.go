package weir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/watermark"
)

// WatermarkStrategy says how a stream gets event timestamps and
// watermarks (Flink's WatermarkStrategy): a timestamp assigner, and a
// generator of watermarks, run per split inside a source
// (FromSourceWithWatermarks) or on any stream (AssignTimestampsAndWatermarks).
// Make one with ForBoundedOutOfOrderness, ForMonotonousTimestamps,
// ForGenerator or NoWatermarks; the zero value is invalid.
//
// Generators emit periodically, every pipeline.auto-watermark-interval
// (200 ms by default; 0 emits after every batch), the watermark each split
// reached; a source subtask's watermark is the minimum over its splits.
type WatermarkStrategy[T any] struct {
	kind     strategyKind
	bound    time.Duration
	newGen   func() WatermarkGenerator[T]
	assign   func(v T, recordTimestamp int64) int64
	idleness time.Duration
	err      error
}

type strategyKind uint8

const (
	strategyUnset strategyKind = iota
	strategyBounded
	strategyCustom
	strategyNone
)

// ForBoundedOutOfOrderness generates watermarks for records at most
// maxOutOfOrderness out of order: the watermark is the largest timestamp
// seen minus maxOutOfOrderness minus 1 ms, so a record that arrives later
// than that behind the largest one is late.
func ForBoundedOutOfOrderness[T any](maxOutOfOrderness time.Duration) WatermarkStrategy[T] {
	s := WatermarkStrategy[T]{kind: strategyBounded, bound: maxOutOfOrderness}
	if maxOutOfOrderness < 0 {
		s.err = fmt.Errorf("ForBoundedOutOfOrderness(%v): the bound must not be negative (use 0, or ForMonotonousTimestamps, for ordered timestamps)", maxOutOfOrderness)
	}
	return s
}

// ForMonotonousTimestamps generates watermarks for timestamps that never
// decrease within a split: the watermark is the largest timestamp minus 1 ms.
func ForMonotonousTimestamps[T any]() WatermarkStrategy[T] {
	return WatermarkStrategy[T]{kind: strategyBounded}
}

// ForGenerator uses a generator of your own; newGen is called once per
// split.
func ForGenerator[T any](newGen func() WatermarkGenerator[T]) WatermarkStrategy[T] {
	s := WatermarkStrategy[T]{kind: strategyCustom, newGen: newGen}
	if newGen == nil {
		s.err = errors.New("ForGenerator(nil): give a function returning a new WatermarkGenerator")
	}
	return s
}

// NoWatermarks assigns timestamps (WithTimestampAssigner) but generates no
// watermarks: event time advances only at the end of a bounded input.
func NoWatermarks[T any]() WatermarkStrategy[T] {
	return WatermarkStrategy[T]{kind: strategyNone}
}

// WithTimestampAssigner sets how a record's event timestamp (milliseconds)
// is extracted; recordTimestamp is the timestamp it already has
// (NoTimestamp in a source). Sources need one; on a stream whose records
// carry timestamps, records keep theirs without it.
func (s WatermarkStrategy[T]) WithTimestampAssigner(f func(v T, recordTimestamp int64) int64) WatermarkStrategy[T] {
	s.assign = f
	return s
}

// WithIdleness lets a split (or a whole input) that reads no records for
// timeout stop holding event time back, until records arrive again (Flink's
// withIdleness). Without it, one silent Kafka partition stops every window
// downstream.
func (s WatermarkStrategy[T]) WithIdleness(timeout time.Duration) WatermarkStrategy[T] {
	s.idleness = timeout
	if timeout <= 0 && s.err == nil {
		s.err = fmt.Errorf("WithIdleness(%v): the timeout must be positive", timeout)
	}
	return s
}

// validate reports what is wrong with s for use at where.
func (s WatermarkStrategy[T]) validate(where string, inputTimed bool) error {
	switch {
	case s.kind == strategyUnset:
		return fmt.Errorf("%s: the WatermarkStrategy is the zero value: make it with ForBoundedOutOfOrderness, ForMonotonousTimestamps, ForGenerator or NoWatermarks", where)
	case s.err != nil:
		return fmt.Errorf("%s: %w", where, s.err)
	case s.assign == nil && !inputTimed:
		return fmt.Errorf("%s: the records carry no timestamps: give the WatermarkStrategy a WithTimestampAssigner", where)
	}
	return nil
}

// WatermarkGenerator generates watermarks from the records of one split
// (Flink's WatermarkGenerator). Both methods run on the task goroutine.
type WatermarkGenerator[T any] interface {
	// OnEvent sees every record with its timestamp. A watermark it emits
	// goes out at the next periodic emission.
	OnEvent(v T, timestamp int64, out *WatermarkOutput)
	// OnPeriodicEmit runs every pipeline.auto-watermark-interval.
	OnPeriodicEmit(out *WatermarkOutput)
}

// WatermarkOutput takes the watermarks of a WatermarkGenerator.
type WatermarkOutput struct {
	wm int64
}

// EmitWatermark says that no records at or before ts follow. A watermark
// below one emitted before is ignored.
func (o *WatermarkOutput) EmitWatermark(ts int64) {
	if ts > o.wm {
		o.wm = ts
	}
}

// customGen adapts a user's generator of one split to the watermark core:
// the operator calls the user's OnEvent with each record itself (the core
// sees only timestamps), the core asks for the periodic watermark.
type customGen[T any] struct {
	gen WatermarkGenerator[T]
	out WatermarkOutput
}

func (g *customGen[T]) OnEvent(int64) {}

func (g *customGen[T]) OnPeriodicEmit() (int64, bool) {
	g.gen.OnPeriodicEmit(&g.out)
	return g.out.wm, g.out.wm != MinWatermark
}

// noGen generates no watermark (NoWatermarks).
type noGen struct{}

func (noGen) OnEvent(int64)                 {}
func (noGen) OnPeriodicEmit() (int64, bool) { return 0, false }

// generation is the watermark side of an operator that runs a strategy: a
// source or a timestamp assigner. It owns the watermark core of the
// subtask (per split) and performs its actions on the task's output.
type generation[T any] struct {
	s      WatermarkStrategy[T]
	core   *watermark.Source
	out    dataflow.WatermarkOutput
	known  map[string]*customGen[T] // splits added to core; the adapter for custom generators
	next   *customGen[T]            // the adapter core.AddSplit's NewGenerator returns
	ts     []int64
	clock  eventClock // the emitted watermark, checkpointed: the core's floor
	perRec bool       // interval 0: tick after every batch
	// origin is the first tick's time and lastTick the last ms passed to
	// the core: Tick takes milliseconds on the monotonic clock since
	// origin, so a step of the wall clock neither makes every quiet split
	// idle at once (forward: their records would turn late) nor keeps
	// them active for the size of the step (back).
	origin   time.Time
	lastTick int64
}

func (g *generation[T]) open(rc *RuntimeContext, interval time.Duration) error {
	if err := g.clock.open(rc.ops); err != nil {
		return err
	}
	cfg := watermark.SourceConfig{IdleTimeout: g.s.idleness}
	switch g.s.kind {
	case strategyBounded:
		bound := g.s.bound.Milliseconds()
		cfg.NewGenerator = func() watermark.Generator { return watermark.BoundedOutOfOrderness(bound) }
	case strategyCustom:
		cfg.NewGenerator = func() watermark.Generator { return g.next }
	default:
		cfg.NewGenerator = func() watermark.Generator { return noGen{} }
	}
	core, err := watermark.NewSource(cfg, g.clock.wm)
	if err != nil {
		return err
	}
	g.core, g.known, g.perRec = core, map[string]*customGen[T]{}, interval <= 0
	return nil
}

// split returns the adapter of split id, adding the split on first sight.
func (g *generation[T]) split(id string) *customGen[T] {
	if a, ok := g.known[id]; ok {
		return a
	}
	var a *customGen[T]
	if g.s.kind == strategyCustom {
		a = &customGen[T]{gen: g.s.newGen(), out: WatermarkOutput{wm: MinWatermark}}
	}
	g.next = a
	g.core.AddSplit(id)
	g.next = nil
	g.known[id] = a
	return a
}

// records assigns the timestamps of a batch of split id (in, nil when the
// records have none), feeds them to the generators and performs what the
// core answers (MarkActive goes out before the records). It returns the
// batch's timestamps.
func (g *generation[T]) records(ctx context.Context, id string, batch []T, in []int64) ([]int64, error) {
	if len(batch) == 0 {
		return nil, nil
	}
	a := g.split(id)
	ts := in
	if g.s.assign != nil {
		ts = g.ts[:0]
		for i, v := range batch {
			prev := NoTimestamp
			if in != nil {
				prev = in[i]
			}
			ts = append(ts, g.s.assign(v, prev))
		}
		g.ts = ts
	}
	if a != nil {
		for i, v := range batch {
			a.gen.OnEvent(v, ts[i], &a.out)
		}
	}
	if err := g.perform(ctx, g.core.Records(id, ts)); err != nil {
		return nil, err
	}
	return ts, nil
}

// finish removes a split that ended.
func (g *generation[T]) finish(id string) {
	if _, ok := g.known[id]; ok {
		g.core.FinishSplit(id)
		delete(g.known, id)
	}
}

func (g *generation[T]) tick(ctx context.Context, now time.Time) error {
	if g.origin.IsZero() {
		g.origin = now
	}
	g.lastTick = max(g.lastTick, now.Sub(g.origin).Milliseconds())
	return g.perform(ctx, g.core.Tick(g.lastTick))
}

func (g *generation[T]) perform(ctx context.Context, acts []watermark.Action) error {
	for _, a := range acts {
		var err error
		switch a := a.(type) {
		case watermark.Emit:
			g.clock.wm = a.TS
			err = g.out.EmitWatermark(ctx, a.TS)
		case watermark.MarkIdle:
			err = g.out.MarkIdle(ctx)
		case watermark.MarkActive:
			err = g.out.MarkActive(ctx)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// AssignTimestampsAndWatermarks gives the records of s new timestamps and
// watermarks by strategy (Flink's assignTimestampsAndWatermarks): the
// watermarks of s are replaced by those the strategy generates, except the
// one at the end of a bounded input. Prefer FromSourceWithWatermarks on a
// source that reads several splits: there the watermarks are generated
// per split.
func AssignTimestampsAndWatermarks[T any](s Stream[T], strategy WatermarkStrategy[T]) Stream[T] {
	if err := strategy.validate(fmt.Sprintf("AssignTimestampsAndWatermarks after %q", s.node.Name), s.node.Timed); err != nil {
		s.env.fail(err)
	}
	n := newNode[T](s.env, "Timestamps/Watermarks", forward(s.node), func(int) dataflow.Operator {
		return &assignerOp[T]{gen: generation[T]{s: strategy}}
	})
	n.Timed = true
	inputFactory[T](n)
	return Stream[T]{env: s.env, node: n}
}

type assignerOp[T any] struct {
	baseOp
	emitter[T]
	gen generation[T]
	rc  *RuntimeContext
}

func (o *assignerOp[T]) Open(_ context.Context, oc *dataflow.OperatorContext) error {
	o.oc, o.rc = oc, newRuntimeContext(oc)
	return o.gen.open(o.rc, oc.AutoWatermarkInterval)
}

func (o *assignerOp[T]) SetWatermarkOutput(out dataflow.WatermarkOutput) { o.gen.out = out }

func (o *assignerOp[T]) Push(ctx context.Context, batch []T, ts []int64) error {
	out, err := o.gen.records(ctx, "", batch, ts)
	if err != nil {
		return err
	}
	if err := o.emit(ctx, batch, out); err != nil {
		return err
	}
	if o.gen.perRec {
		return o.gen.tick(ctx, o.oc.Now())
	}
	return nil
}

func (o *assignerOp[T]) OnPeriodicEmit(ctx context.Context, now time.Time) error {
	return o.gen.tick(ctx, now)
}

// ProcessWatermark drops the upstream watermarks, which the strategy's
// replace, but forwards the end of a bounded input.
func (o *assignerOp[T]) ProcessWatermark(_ context.Context, wm int64) (int64, error) {
	if wm == MaxWatermark {
		return wm, nil
	}
	return MinWatermark, nil
}

func (o *assignerOp[T]) SnapshotState(context.Context, checkpoint.ID, time.Time) (dataflow.AsyncSnapshot, error) {
	o.gen.clock.snapshot()
	return operatorStateSnapshot(o.rc)
}

// SplitReader is implemented by a Source that reads several splits (Kafka
// partitions, files): ReadSplit replaces Read and tells which split the
// records it returns come from, so that FromSourceWithWatermarks
// generates watermarks per split and the subtask's watermark is the
// minimum over its splits (as Flink's per-split watermarks). Without it,
// a partition far behind the others would make its records late instead
// of holding event time back.
type SplitReader[T any] interface {
	// ReadSplit is Read, with every record appended in one call from one
	// split. Finished says the split ends with this call: it no longer
	// holds event time back.
	ReadSplit(ctx context.Context, dst []T, max int) ([]T, Split, error)
	// Splits lists the ids of the splits the subtask reads now, read from
	// yet or not. It is called after Open and at every periodic
	// watermark emission: a split holds event time back from the moment it
	// is listed, so records of a split that was slow to deliver its first
	// batch are not late. A split no longer listed is finished.
	Splits() []string
}

// Split names the split of a ReadSplit call.
type Split struct {
	ID       string
	Finished bool
}

// FromSourceWithWatermarks adds a source whose records get timestamps and
// watermarks by strategy, generated inside each source subtask per split
// (SplitReader) or for the subtask as one split. The strategy needs a
// timestamp assigner. At the end of a bounded input the source emits
// MaxWatermark, which fires every event-time window and timer downstream.
//
// As with FromSource, newSource is also called once while the graph is
// built (StateDeclarer).
func FromSourceWithWatermarks[T any](env *Env, newSource func() Source[T], strategy WatermarkStrategy[T]) Stream[T] {
	if err := strategy.validate("FromSourceWithWatermarks", false); err != nil {
		env.fail(err)
	}
	n := newNode[T](env, "Source", nil, func(int) dataflow.Operator {
		return &wmSourceOp[T]{sourceOp: sourceOp[T]{src: newSource()}, gen: generation[T]{s: strategy}}
	})
	n.Timed = true
	n.SideOutputs = true // CollectSourceSide
	return declaredBy(Stream[T]{env: env, node: n}, newSource)
}

// wmSourceOp is a source operator that generates watermarks.
type wmSourceOp[T any] struct {
	sourceOp[T]
	gen    generation[T]
	splits SplitReader[T] // src, if it reads splits
}

func (o *wmSourceOp[T]) Open(ctx context.Context, oc *dataflow.OperatorContext) error {
	if err := o.sourceOp.Open(ctx, oc); err != nil {
		return err
	}
	o.splits, _ = o.src.(SplitReader[T])
	if err := o.gen.open(o.rc, oc.AutoWatermarkInterval); err != nil {
		return err
	}
	o.syncSplits()
	return nil
}

// syncSplits adds the splits the source lists and finishes those it no
// longer does.
func (o *wmSourceOp[T]) syncSplits() {
	if o.splits == nil {
		return
	}
	ids := o.splits.Splits()
	for _, id := range ids {
		o.gen.split(id)
	}
	if len(o.gen.known) > len(ids) {
		listed := make(map[string]bool, len(ids))
		for _, id := range ids {
			listed[id] = true
		}
		for id := range o.gen.known {
			if !listed[id] {
				o.gen.finish(id)
			}
		}
	}
}

func (o *wmSourceOp[T]) SetWatermarkOutput(out dataflow.WatermarkOutput) { o.gen.out = out }

func (o *wmSourceOp[T]) OnPeriodicEmit(ctx context.Context, now time.Time) error {
	o.syncSplits()
	return o.gen.tick(ctx, now)
}

func (o *wmSourceOp[T]) Emit(ctx context.Context) (int, error) {
	var buf []T
	var split Split
	var err error
	if o.splits != nil {
		buf, split, err = o.splits.ReadSplit(ctx, o.buf[:0], o.oc.BatchSize)
	} else {
		buf, err = o.src.Read(ctx, o.buf[:0], o.oc.BatchSize)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	o.buf = buf
	ts, gerr := o.gen.records(ctx, split.ID, buf, nil)
	if gerr != nil {
		return 0, gerr
	}
	if perr := o.emit(ctx, buf, ts); perr != nil {
		return 0, perr
	}
	if perr := o.flushSides(ctx); perr != nil {
		return 0, perr
	}
	if split.Finished {
		o.gen.finish(split.ID)
	}
	if o.gen.perRec {
		if terr := o.OnPeriodicEmit(ctx, o.oc.Now()); terr != nil {
			return 0, terr
		}
	}
	return len(buf), err
}

func (o *wmSourceOp[T]) SnapshotState(ctx context.Context, id checkpoint.ID, ts time.Time) (dataflow.AsyncSnapshot, error) {
	o.gen.clock.snapshot()
	return o.sourceOp.SnapshotState(ctx, id, ts)
}
