package postgrescdc

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/weirstream/weir"
)

// A parallel initial snapshot (WithSnapshotParallelism) is two
// vertices: the planner, subtask 0 of a parallelism-1 source that holds
// the slot, plans each table's key ranges, hands them out and then
// streams the log; and n snapshot readers keyed by range. The planner
// sends both the range assignments and the log changes over one keyed
// edge, keyed by the range a change's key falls in, and a reader reads a
// range when its assignment arrives and then judges the range's log
// changes with the range's own snapshot (the skip rule of
// visibility.go). So a key's snapshot row and its later log changes
// leave the same reader on the same channel, in order, and no engine
// coordinator is needed. docs/connectors/postgres-cdc.md ("Parallel
// initial snapshot") has the argument.

// routed is a record on the edge from the planner to the snapshot
// readers.
type routed struct {
	// Chunk is the edge key: chunkID(table, range) of the planned range
	// the record belongs to, or directID for a Direct record.
	Chunk uint64
	// Assign, if set, asks the reader to read a range.
	Assign *assignment
	// Change is a log change of a key in range Chunk, for the reader to
	// judge against the range's snapshot (unless Direct).
	Change Change
	// Direct: the planner judged Change itself (it continues a position
	// of the parallelism-1 source, whose chunks it holds); the reader
	// passes it on.
	Direct bool
}

// assignment is one planned range for a reader to read.
type assignment struct {
	Table, Range int
	Lower, Upper []keyVal // nil: -∞, +∞
	// Exported is the slot's exported snapshot: the range's own
	// snapshot must see every transaction it saw (takeSnapshot).
	Exported pgSnapshot
}

// WithSnapshotParallelism makes Capture read the initial snapshot with n
// parallel readers (default 1: the parallelism-1 source of Source). The
// log is still read by one subtask; the readers pass its changes on. A
// job restored from a checkpoint may change n.
func WithSnapshotParallelism(n int) Option {
	return Option{func(c *config) { c.snapshotParallelism = n }}
}

// Capture adds the capture of tables to env and returns the changes, as
// Source does. With WithSnapshotParallelism(n), n > 1, it adds two
// vertices: uid, at parallelism 1, which holds the slot, plans the
// snapshot and reads the log, and uid+"-snapshot", at parallelism n,
// which reads the snapshot's key ranges and emits them and the log
// changes. Otherwise it is weir.FromSource(env, Source(…)) with uid, at
// parallelism 1, so a job can move between the two across a restore from
// a checkpoint of the parallelism-1 source (the reverse is refused).
//
// The parallel snapshot keeps the guarantees of the source: every
// snapshot row and change once, in commit order per key, under failures
// and restores at another n, with aligned or unaligned checkpoints, in
// one process or several (Change encodes itself: MarshalBinary).
func Capture(env *weir.Env, uid, connString string, tables []string, opts ...Option) weir.Stream[Change] {
	cfg := newConfig(opts)
	if cfg.snapshotParallelism <= 1 {
		return weir.FromSource(env, Source(connString, tables, opts...)).Name(uid).UID(uid).Parallelism(1)
	}
	names := slices.Clone(tables)
	pcfg := cfg
	pcfg.planner = true
	created := &createdSlot{}
	prog := &rangesRead{}
	plan := weir.FromSource(env, func() weir.Source[routed] {
		return &planner{s: &source{connString: connString, names: names, cfg: pcfg, created: created}, read: prog}
	}).Name(uid).UID(uid).Parallelism(1)
	keyed := weir.KeyBy(plan, func(r routed) uint64 { return r.Chunk })
	return weir.Process(keyed, func() weir.KeyedProcessFunction[uint64, routed, Change] {
		return &reader{connString: connString, names: names, cfg: cfg, read: prog}
	}).Name(uid + " snapshot").UID(uid + "-snapshot").Parallelism(cfg.snapshotParallelism).
		// Declared, so a restore checks the readers' state before any
		// task runs (weir savepoint check too).
		Declare(weir.ValueStateOf[rangeRead](readerStateName))
}

// planner is the parallel snapshot's source: the parallelism-1 source's
// slot, position and log, with the snapshot replaced by a plan of key
// ranges handed to the readers.
type planner struct {
	s       *source
	scratch []Change

	// Pacing (see ahead): barriers are the checkpoints taken during the
	// snapshot with the ranges assigned before each, oldest first; done
	// is how many ranges a completed checkpoint covered (every range
	// assigned before its barrier was read: the edge's barriers are
	// aligned). checkpoints says a checkpoint was taken in this
	// attempt; holdSince when the planner began waiting for one.
	barriers    []pendingConfirm
	done        int
	checkpoints bool
	holdSince   time.Time
	// read counts the ranges the readers in this process read; readBase
	// and assignedBase are it and the ranges assigned when this attempt
	// opened.
	read                   *rangesRead
	readBase, assignedBase int64
}

// rangesRead counts the ranges the snapshot readers of one Capture read
// in this process: the planner's quick signal that a reader is free (see
// ahead). It is only a pace: exactness never depends on it, and where
// readers run in another process the planner goes by completed
// checkpoints alone.
type rangesRead struct{ n atomic.Int64 }

// noCheckpoints is how long a planner that has seen no checkpoint holds
// an assignment before it concludes that the job takes none (and that
// its readers' progress is not visible to it) and stops holding.
const noCheckpoints = 10 * time.Second

// ahead is how many ranges the planner hands out beyond those known
// read: per reader cfg.snapshotAhead (default defaultAhead). Without a
// bound every assignment would precede the first barrier, so no
// checkpoint could complete before the whole snapshot was read, a
// failure would read it all again, and a reader would hold every range
// of an input batch in memory at once (a keyed function's output leaves
// after the batch). With it a barrier queues behind at most this many
// unread ranges, and a failure re-reads the ranges assigned after the
// restored checkpoint: those read since (a checkpoint interval's worth)
// and at most this many more. A range is known read when the readers in
// this process count it (rangesRead) or a checkpoint after its
// assignment completed.
func (p *planner) ahead() int {
	a := p.s.cfg.snapshotAhead
	if a <= 0 {
		a = defaultAhead
	}
	return a * p.s.cfg.snapshotParallelism
}

// defaultAhead ranges per reader. Ranges go to readers by the hash of
// their id, not in turn, so the ranges in flight are spread unevenly: of
// 2n in flight, all sit at one of two readers one time in eight, and
// the other reader idles; of 4n, one time in 128. The memory it costs
// is at most 4n ranges' rows at one reader.
const defaultAhead = 4

func (p *planner) DeclareStates() []weir.StateDecl { return p.s.DeclareStates() }

func (p *planner) Open(ctx context.Context, rc *weir.RuntimeContext) error {
	if err := p.s.Open(ctx, rc); err != nil {
		return err
	}
	// The ranges a restored position assigned were read before its
	// checkpoint completed.
	p.done = assigned(&p.s.st)
	p.checkpoints = rc.Restored()
	p.assignedBase, p.readBase = int64(p.done), p.read.n.Load()
	return nil
}

func (p *planner) SnapshotState(id int64) error {
	p.barrier(id)
	return p.s.SnapshotState(id)
}

func (p *planner) NotifyCheckpointComplete(ctx context.Context, id int64) error {
	p.complete(id)
	return p.s.NotifyCheckpointComplete(ctx, id)
}

// barrier notes checkpoint id and the ranges assigned before its barrier.
func (p *planner) barrier(id int64) {
	p.checkpoints = true
	if st := &p.s.st; st.Planned && !st.Streaming {
		p.barriers = append(p.barriers, pendingConfirm{id: id, done: uint64(assigned(st))})
	}
}

// complete takes in that checkpoint id completed: the ranges assigned
// before its barrier (and those of older ones) were read.
func (p *planner) complete(id int64) {
	i := 0
	for ; i < len(p.barriers) && p.barriers[i].id <= id; i++ {
		p.done = max(p.done, int(p.barriers[i].done))
	}
	p.barriers = p.barriers[i:]
}

// hold reports whether the planner waits with the next assignment (see
// ahead).
func (p *planner) hold() bool {
	a := assigned(&p.s.st)
	inFlight := int64(a) - p.assignedBase - (p.read.n.Load() - p.readBase)
	if a < p.done+p.ahead() || inFlight < int64(p.ahead()) {
		p.holdSince = time.Time{}
		return false
	}
	if p.checkpoints {
		return true
	}
	if p.holdSince.IsZero() {
		p.holdSince = time.Now()
	}
	return time.Since(p.holdSince) < noCheckpoints
}

// assigned counts the ranges assigned.
func assigned(st *savedState) int {
	n := 0
	for _, t := range st.Tables {
		n += t.Assigned
	}
	return n
}

func (p *planner) Close(ctx context.Context) error { return p.s.Close(ctx) }

func (p *planner) Read(ctx context.Context, dst []routed, max int) ([]routed, error) {
	s := p.s
	if !s.st.Streaming && !s.st.Planned && !chunksRead(&s.st) {
		if err := p.plan(ctx); err != nil {
			return dst, err
		}
	}
	if !s.st.Planned {
		// A position of the parallelism-1 source with chunks read: it
		// holds their snapshots, so it goes on as that source did
		// (chunks one after another, then the log, judging the log
		// itself) and the readers pass its records on.
		out, err := s.Read(ctx, p.scratch[:0], max)
		for _, c := range out {
			t, k, kerr := p.keyOf(c)
			if kerr != nil {
				return dst, kerr
			}
			dst = append(dst, routed{Chunk: directID(t, k), Change: c, Direct: true})
		}
		clear(out)
		p.scratch = out[:0]
		return dst, err
	}
	if !s.st.Streaming {
		for i := range s.st.Tables {
			tp := &s.st.Tables[i]
			for tp.Assigned <= len(tp.Bounds) {
				if len(dst) >= max {
					return dst, nil
				}
				if p.hold() {
					if len(dst) == 0 {
						// Nothing to emit until a checkpoint completes:
						// do not spin.
						err := sleep(ctx, time.Millisecond)
						return dst, err
					}
					return dst, nil
				}
				r := tp.Assigned
				a := &assignment{Table: i, Range: r, Exported: s.st.Exported}
				if r > 0 {
					a.Lower = tp.Bounds[r-1]
				}
				if r < len(tp.Bounds) {
					a.Upper = tp.Bounds[r]
				}
				dst = append(dst, routed{Chunk: chunkID(i, r), Assign: a})
				tp.Assigned++
			}
			tp.Finished = true
		}
		// Every range is assigned: the log may start. Its changes to a
		// range queue behind the range's assignment on the channel to
		// the range's reader, which reads the range first.
		s.st.Streaming = true
		s.log.Info("postgres cdc: every snapshot range assigned; streaming the log", "slot", s.cfg.slot, "from", pglogrepl.LSN(s.st.Done))
		if err := s.startStream(ctx); err != nil {
			return dst, err
		}
		if len(dst) > 0 {
			return dst, nil
		}
	}
	out, err := s.readLog(ctx, p.scratch[:0], max-len(dst))
	for _, c := range out {
		t, k, kerr := p.keyOf(c)
		if kerr != nil {
			return dst, kerr
		}
		r := rangeOf(s.tables[t].kinds, s.st.Tables[t].Bounds, k)
		dst = append(dst, routed{Chunk: chunkID(t, r), Change: c})
	}
	clear(out)
	p.scratch = out[:0]
	return dst, err
}

// plan splits every table into ranges of about WithChunkRows rows. It
// runs once, at the start of a snapshot nothing was read of yet; the
// plan is part of the position from then on.
func (p *planner) plan(ctx context.Context) error {
	s := p.s
	total := 0
	for i, t := range s.tables {
		b, err := planBounds(ctx, s.conn, t, s.cfg.chunkRows)
		if err != nil {
			return err
		}
		s.st.Tables[i].Bounds, s.st.Tables[i].Assigned = b, 0
		total += len(b) + 1
	}
	s.st.Planned = true
	p.done, p.assignedBase = 0, 0
	s.log.Info("postgres cdc: planned the snapshot", "slot", s.cfg.slot, "ranges", total, "readers", s.cfg.snapshotParallelism)
	return nil
}

// keyOf returns the table index and primary key of a change the source
// emitted.
func (p *planner) keyOf(c Change) (int, []keyVal, error) {
	for i := range p.s.tables {
		t := &p.s.tables[i]
		if t.schema == c.Schema && t.name == c.Table {
			k, err := changeKey(t, c)
			return i, k, err
		}
	}
	return 0, nil, fmt.Errorf("postgres cdc: a change of %s.%s, which is not captured", c.Schema, c.Table)
}

// chunksRead reports whether a snapshot chunk of the parallelism-1
// source was read.
func chunksRead(st *savedState) bool {
	for _, t := range st.Tables {
		if len(t.Chunks) > 0 || t.Finished {
			return true
		}
	}
	return false
}
