package postgrescdc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/weirstream/weir"
)

// Source returns a factory of change data capture sources for
// weir.FromSource or weir.FromSourceWithWatermarks (Change.Timestamp is
// the commit time): the initial snapshot of tables ("schema.table" or
// "table" for public), then every change to them from the log, exactly
// once (see the package documentation). connString is a pgx connection
// string; its role needs the REPLICATION privilege. The source runs
// with parallelism 1; Capture reads the snapshot in parallel.
func Source(connString string, tables []string, opts ...Option) func() weir.Source[Change] {
	cfg := newConfig(opts)
	names := slices.Clone(tables)
	created := &createdSlot{}
	return func() weir.Source[Change] {
		return &source{connString: connString, names: names, cfg: cfg, created: created}
	}
}

type source struct {
	connString string
	names      []string
	cfg        config
	created    *createdSlot
	uid, job   string
	opened     time.Time

	log     *slog.Logger
	state   *weir.OperatorList[savedState]
	conn    *pgx.Conn // queries: setup, snapshot chunks, metrics
	tables  []tableInfo
	st      savedState
	metrics *metrics

	// streaming
	repl       *pgconn.PgConn
	rels       map[uint32]*relation
	types      *pgtype.Map
	txn        txnState
	maxInsert  uint64
	confirmed  uint64 // what the slot was last told is flushed
	nextStatus time.Time
	lastChange time.Time
	pending    []pendingConfirm // checkpoint id → Done, oldest first
	pend       *pendingChunk    // snapshot rows read, not yet emitted
}

// pendingConfirm is a checkpoint not yet known complete and the position
// it covers.
type pendingConfirm struct {
	id   int64
	done uint64
}

// DeclareStates lists the source's state (weir.StateDeclarer).
func (s *source) DeclareStates() []weir.StateDecl {
	return []weir.StateDecl{weir.OperatorListStateOf[savedState](stateName)}
}

func (s *source) Open(ctx context.Context, rc *weir.RuntimeContext) (err error) {
	s.log = s.cfg.logger
	if s.log == nil {
		s.log = rc.Logger()
	}
	if s.cfg.snapshotParallelism > 1 && !s.cfg.planner {
		return weir.Unrecoverable(fmt.Errorf("postgres cdc source %q: WithSnapshotParallelism(%d) needs the readers Capture adds to the job: build the job with postgrescdc.Capture instead of weir.FromSource(env, postgrescdc.Source(…))", rc.UID(), s.cfg.snapshotParallelism))
	}
	if rc.Parallelism() != 1 {
		return weir.Unrecoverable(fmt.Errorf("postgres cdc source %q: parallelism %d: the source reads one replication slot and runs with parallelism 1: set the source's parallelism to 1", rc.UID(), rc.Parallelism()))
	}
	st, err := weir.GetOperatorListState[savedState](rc, stateName)
	if err != nil {
		return err
	}
	s.state = st
	s.metrics = newMetrics(s.cfg.reg, rc, s.cfg.slot)
	defer func() {
		if err != nil {
			s.Close(ctx)
		}
	}()
	s.conn, err = pgx.Connect(ctx, s.connString)
	if err != nil {
		return fmt.Errorf("postgres cdc source %q: connect: %w", rc.UID(), err)
	}
	if err := s.setup(ctx); err != nil {
		return s.openErr(rc, err)
	}
	s.uid, s.job, s.opened = rc.UID(), rc.JobName(), time.Now()
	if saved := st.Get(); len(saved) > 0 {
		return s.openErr(rc, s.restore(ctx, saved[0]))
	}
	return s.openErr(rc, s.fresh(ctx))
}

func (s *source) openErr(rc *weir.RuntimeContext, err error) error {
	if err == nil {
		return nil
	}
	err = fmt.Errorf("postgres cdc source %q: %w", rc.UID(), err)
	if errors.Is(err, ErrSetup) {
		return weir.Unrecoverable(err)
	}
	return err
}

// setup runs the checks every start needs.
func (s *source) setup(ctx context.Context) error {
	if err := checkServer(ctx, s.conn); err != nil {
		return err
	}
	tables, err := loadTables(ctx, s.conn, s.names)
	if err != nil {
		return err
	}
	s.tables = tables
	return ensurePublication(ctx, s.conn, s.cfg.publication, tables, s.cfg.createPub)
}

// restore continues from a checkpoint: the next unfinished chunk, or the
// log from the checkpoint's position.
func (s *source) restore(ctx context.Context, saved savedState) error {
	if saved.Slot != s.cfg.slot {
		return setupErr("the checkpoint read replication slot %q, the source is configured with %q: configure slot %q again, or start the job afresh", saved.Slot, s.cfg.slot, saved.Slot)
	}
	if len(saved.Tables) != len(s.tables) {
		return setupErr("the checkpoint captured %d tables, the source is configured with %d: capture the same tables, or start the job afresh with a new slot", len(saved.Tables), len(s.tables))
	}
	for i, t := range saved.Tables {
		if t.Table != s.tables[i].qualified() {
			return setupErr("the checkpoint captured table %s where the source is configured with %s: capture the same tables in the same order, or start the job afresh with a new slot", t.Table, s.tables[i].qualified())
		}
	}
	if saved.Planned && !s.cfg.planner {
		return setupErr("the checkpoint was taken by a parallel snapshot (WithSnapshotParallelism, --snapshot-parallelism), whose readers hold the snapshot's progress: restore it with a parallel snapshot (any number of readers above 1)")
	}
	s.st = saved
	if !s.st.Streaming {
		// The slot has confirmed nothing yet: its start point must
		// still be where the checkpoint's replay begins.
		slot, err := readSlotFree(ctx, s.conn, s.cfg.slot)
		if err != nil {
			return err
		}
		if !slot.exists {
			return setupErr("replication slot %q is gone: it held the log since the snapshot started: start the job afresh (without the checkpoint)", s.cfg.slot)
		}
		if slot.confirmed > s.st.StartLSN {
			return setupErr("replication slot %q confirmed %s, past its start point %s that the unfinished snapshot replays from: start the job afresh with a new slot", s.cfg.slot, pglogrepl.LSN(slot.confirmed), pglogrepl.LSN(s.st.StartLSN))
		}
		chunks := 0
		for _, t := range s.st.Tables {
			chunks += len(t.Chunks)
		}
		s.log.Info("postgres cdc: resuming the snapshot", "slot", s.cfg.slot, "chunks read", chunks, "ranges assigned", assigned(&s.st))
		return nil
	}
	return s.startStream(ctx)
}

func (s *source) Read(ctx context.Context, dst []Change, max int) ([]Change, error) {
	if !s.st.Streaming {
		if s.pend != nil {
			return s.emitPending(dst, max), nil
		}
		for i := range s.st.Tables {
			if s.st.Tables[i].Finished {
				continue
			}
			for try := 0; ; try++ {
				pc, err := s.readChunk(ctx, i, s.cfg.chunkRows)
				var retry *retrySnapshot
				if errors.As(err, &retry) && try < maxSnapshotRetries {
					if err := sleep(ctx, 10*time.Millisecond); err != nil {
						return dst, err
					}
					continue
				}
				if err != nil {
					return dst, err
				}
				s.pend = pc
				return s.emitPending(dst, max), nil
			}
		}
		s.st.Streaming = true
		s.log.Info("postgres cdc: snapshot done; streaming the log", "slot", s.cfg.slot, "from", pglogrepl.LSN(s.st.Done))
		if err := s.startStream(ctx); err != nil {
			return dst, err
		}
	}
	return s.readLog(ctx, dst, max)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SnapshotState stores the position. The state holds only completed
// work: whole chunks, whole transactions or a counted prefix of one.
func (s *source) SnapshotState(id int64) error {
	st := s.st
	st.Tables = slices.Clone(st.Tables)
	for i := range st.Tables {
		st.Tables[i].Chunks = slices.Clone(st.Tables[i].Chunks)
	}
	s.state.Update([]savedState{st})
	if st.Streaming {
		s.pending = append(s.pending, pendingConfirm{id: id, done: st.Done})
	}
	if s.cfg.onSnapshot != nil {
		s.cfg.onSnapshot(id, st)
	}
	return nil
}

// NotifyCheckpointComplete lets the slot confirm what checkpoint id
// covers (weir.CheckpointListener): the server may then recycle the WAL
// before it. Nothing later is confirmed, so a restore from this
// checkpoint finds every change after it still in the slot.
func (s *source) NotifyCheckpointComplete(ctx context.Context, id int64) error {
	if s.cfg.onComplete != nil {
		s.cfg.onComplete(id)
	}
	var done uint64
	i := 0
	for ; i < len(s.pending) && s.pending[i].id <= id; i++ {
		done = max(done, s.pending[i].done)
	}
	s.pending = s.pending[i:]
	if done > s.confirmed {
		s.confirmed = done
		if s.cfg.onConfirm != nil {
			s.cfg.onConfirm(id, done)
		}
		if err := s.maybeStatus(ctx, true); err != nil {
			return err
		}
	}
	s.metrics.retained(ctx, s.conn, s.cfg.slot)
	return nil
}

func (s *source) Close(ctx context.Context) error {
	cctx := context.WithoutCancel(ctx)
	if s.repl != nil {
		s.repl.Close(cctx)
		s.repl = nil
	}
	if s.conn != nil {
		s.conn.Close(cctx)
		s.conn = nil
	}
	return nil
}
