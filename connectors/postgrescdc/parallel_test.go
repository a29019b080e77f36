package postgrescdc

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/testutil"
)

// rangeProbe watches a parallel snapshot: how often each range was
// read, and how many ranges the newest completed checkpoint had
// assigned; it fails a reader once, after a range of items, once a
// completed checkpoint assigned minAssigned ranges.
type rangeProbe struct {
	mu          sync.Mutex
	reads       map[string]int   // "table/range" → times read
	assignedAt  map[int64]int    // checkpoint id → ranges assigned (chunks read, parallelism 1)
	planned     map[int64]int    // checkpoint id → ranges planned
	positions   map[int64]uint64 // checkpoint id → Done, streaming checkpoints
	completed   int64
	minAssigned int
	failAfter   int // fail at the failAfter-th items range read (0: never)
	itemsReads  int
	failed      atomic.Bool
	suppressed  atomic.Int64
	tables      map[int64]map[string]int // checkpoint id → table → ranges assigned
	bad         []string
	// unaligned: a checkpoint may hold an assignment as channel state,
	// read before the failure and again after the restore, rightly.
	unaligned bool
	// stop, if set, is the error the injected failure returns; a test
	// that restores in a new run makes it unrecoverable.
	stop error
}

func newRangeProbe() *rangeProbe {
	return &rangeProbe{tables: map[int64]map[string]int{}, reads: map[string]int{}, assignedAt: map[int64]int{}, planned: map[int64]int{}, positions: map[int64]uint64{}}
}

func (p *rangeProbe) options() Option {
	return Option{func(c *config) {
		c.afterChunk = func(table string, r int) error {
			p.mu.Lock()
			defer p.mu.Unlock()
			key := fmt.Sprint(table, "/", r)
			if !p.unaligned && p.reads[key] > 0 && p.tables[p.completed][table] > r {
				// A completed checkpoint assigned the range, so the
				// readers had read it: a restore must not assign it again.
				p.bad = append(p.bad, fmt.Sprintf("range %s read again although checkpoint %d, completed, had assigned it", key, p.completed))
			}
			p.reads[key]++
			if table != "public.items" {
				return nil
			}
			p.itemsReads++
			if p.failAfter > 0 && p.itemsReads >= p.failAfter && !p.failed.Load() && p.assignedAt[p.completed] >= p.minAssigned {
				p.failed.Store(true)
				if p.stop != nil {
					return p.stop
				}
				return errors.New("injected failure of a snapshot reader")
			}
			return nil
		}
		c.onSnapshot = func(id int64, st savedState) {
			p.mu.Lock()
			defer p.mu.Unlock()
			assigned, planned := 0, 0
			p.tables[id] = map[string]int{}
			for _, t := range st.Tables {
				p.tables[id][t.Table] = t.Assigned
				assigned += t.Assigned + len(t.Chunks)
				if st.Planned {
					planned += len(t.Bounds) + 1
				}
			}
			p.assignedAt[id], p.planned[id] = assigned, planned
			if st.Streaming {
				p.positions[id] = st.Done
			}
		}
		c.onSuppress = func() { p.suppressed.Add(1) }
		c.onComplete = func(id int64) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.completed = max(p.completed, id)
		}
	}}
}

// runCapture runs Capture → replica sink once, to its idle end.
func runCapture(ctx context.Context, env *weir.Env, src, dst, slot string, opts ...Option) error {
	opts = append([]Option{WithSlot(slot), WithPublication("pub"), WithCreateSlot(), WithCreatePublication(), WithIdleTimeout(1500 * time.Millisecond), WithStatusInterval(200 * time.Millisecond)}, opts...)
	s := Capture(env, "cdc", src, capturedTables, opts...)
	weir.SinkToTransactional(s, replicaWith(dst, replicaConfig{journal: "journal"})).Name("replica").UID("replica").Parallelism(1)
	return env.Execute(ctx, "cdctest")
}

// TestParallelSnapshotUnderFailures: the exactness test of
// TestExactlyOnceUnderFailures with the snapshot read by 2 and 3
// readers: a writer changes the tables throughout; a reader fails after
// a range once a checkpoint assigned ranges, and 4 failures fall at the
// checkpoint protocol's crash points. The replica equals the source, the
// changelog holds every snapshot row and change once and replays on a
// model, log changes were skipped as seen by their range, and no range
// was read again once a completed checkpoint had assigned it.
//
// With unaligned checkpoints (readers=2/unaligned) the assignments and
// changes in flight are channel state (Change.MarshalBinary): a restore
// hands them to the readers again, which read the ranges anew.
func TestParallelSnapshotUnderFailures(t *testing.T) {
	for _, tc := range []struct {
		n         int
		unaligned bool
	}{{2, false}, {3, false}, {2, true}} {
		n := tc.n
		name := fmt.Sprintf("readers=%d", n)
		if tc.unaligned {
			name += "/unaligned"
		}
		t.Run(name, func(t *testing.T) {
			src, name := newDB(t)
			dst, _ := newDB(t)
			srcDB := connect(t, src)
			createTables(t, srcDB, 3000)
			p := newRangeProbe()
			p.failAfter, p.minAssigned, p.unaligned = 20, 10, tc.unaligned
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var extra map[string]string
			if tc.unaligned {
				extra = map[string]string{"execution.checkpointing.unaligned.enabled": "true"}
			}
			env := weir.NewEnv(weir.WithConfig(testutil.FaultConfig(t, 1, filepath.Join(t.TempDir(), "state"), "20ms", false, extra)))
			// Span counts the planner's records: about 110 assignments and the
			// log changes, not the snapshot rows the readers emit.
			plan := &faults.Plan{Failures: 4, Seed: int64(7 + n), Span: 500, Points: []faults.Point{faults.Process, faults.SnapshotSync, faults.AfterPreCommit, faults.Commit}, OnePerAttempt: true}
			log, inj := testutil.Observe(env, plan)
			wait := startWriter(ctx, t, src, int64(n), 300, 3*time.Millisecond)
			err := runCapture(ctx, env, src, dst, "s_"+name, p.options(), WithChunkRows(40), WithSnapshotParallelism(n))
			wrote := wait()
			if err != nil {
				t.Fatalf("job: %v\n%s", err, tail(log.String()))
			}
			t.Logf("writer committed %d transactions; %d injected failures fired; reader failure fired: %v; %d log changes skipped as seen by their range", wrote, inj.Fired(), p.failed.Load(), p.suppressed.Load())
			checkReplica(t, srcDB, connect(t, dst))
			checkJournal(t, srcDB, connect(t, dst))
			p.checkRanges(t)
			if p.suppressed.Load() == 0 {
				t.Errorf("no log change was skipped as seen by its range: the test did not exercise the skip rule")
			}
		})
	}
}

// checkRanges: every planned range was read, none again after a
// completed checkpoint had assigned it, and the injected failure fired;
// it returns how many ranges were read more than once.
func (p *rangeProbe) checkRanges(t *testing.T) (twice int) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.failed.Load() {
		t.Errorf("the reader failure never fired")
	}
	planned := 0
	for _, n := range p.planned {
		planned = max(planned, n)
	}
	if planned == 0 {
		t.Fatalf("no checkpoint held a plan")
	}
	for _, n := range p.reads {
		if n >= 2 {
			twice++
		}
	}
	for _, b := range p.bad {
		t.Error(b)
	}
	if len(p.reads) != planned {
		t.Errorf("%d ranges read, %d planned", len(p.reads), planned)
	}
	t.Logf("%d ranges planned, %d read more than once (after a failure)", planned, twice)
	return twice
}

// TestParallelSnapshotRescale: a parallel snapshot fails for good in
// the middle of the snapshot; the job is started again from its newest
// checkpoint with another number of readers (2 → 3 and 3 → 2: the
// readers' ranges are keyed state, redistributed) and finishes: replica
// equal, nothing twice.
func TestParallelSnapshotRescale(t *testing.T) {
	for _, tc := range []struct{ from, to int }{{2, 3}, {3, 2}} {
		t.Run(fmt.Sprintf("%d-to-%d", tc.from, tc.to), func(t *testing.T) { parallelSnapshotRescale(t, tc.from, tc.to) })
	}
}

func parallelSnapshotRescale(t *testing.T, from, to int) {
	src, name := newDB(t)
	dst, _ := newDB(t)
	srcDB := connect(t, src)
	createTables(t, srcDB, 3000)
	p := newRangeProbe()
	p.failAfter, p.minAssigned = 25, 10
	p.stop = weir.Unrecoverable(errors.New("injected failure: stop the job"))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	state := filepath.Join(t.TempDir(), "state")
	wait := startWriter(ctx, t, src, 5, 400, 3*time.Millisecond)
	slot := "s_" + name
	env := weir.NewEnv(weir.WithConfig(testutil.FaultConfig(t, 1, state, "20ms", true, nil)))
	log, _ := testutil.Observe(env, nil)
	err := runCapture(ctx, env, src, dst, slot, p.options(), WithChunkRows(40), WithSnapshotParallelism(from))
	if err == nil || !strings.Contains(err.Error(), "injected failure") {
		t.Fatalf("first run: want the injected failure, got %v\n%s", err, tail(log.String()))
	}
	p.mu.Lock()
	restoredAssigned := p.assignedAt[p.completed]
	p.mu.Unlock()
	env = weir.NewEnv(weir.WithConfig(testutil.FaultConfig(t, 1, state, "20ms", false, nil)))
	log, _ = testutil.Observe(env, nil)
	err = runCapture(ctx, env, src, dst, slot, p.options(), WithChunkRows(40), WithSnapshotParallelism(to))
	wrote := wait()
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, tail(log.String()))
	}
	t.Logf("writer committed %d transactions; the second run (%d readers) restored a checkpoint with %d ranges assigned; %d log changes skipped as seen by their range", wrote, to, restoredAssigned, p.suppressed.Load())
	checkReplica(t, srcDB, connect(t, dst))
	checkJournal(t, srcDB, connect(t, dst))
	if twice := p.checkRanges(t); twice > 111/2 {
		t.Errorf("%d ranges read more than once: was the checkpoint restored?", twice)
	}
	if restoredAssigned == 0 {
		t.Errorf("the second run restored no assigned ranges: the rescale was not mid-snapshot")
	}
}

// TestParallelSnapshotRestoresSerialPosition: a job of the parallelism-1
// source (Source) fails for good in the middle of its snapshot; started
// again with a parallel snapshot (Capture, 2 readers) from its newest
// checkpoint, the planner continues that position itself (its chunks
// hold the snapshots the log replay needs) and the readers pass its
// records on: replica equal, nothing twice.
func TestParallelSnapshotRestoresSerialPosition(t *testing.T) {
	src, name := newDB(t)
	dst, _ := newDB(t)
	srcDB := connect(t, src)
	createTables(t, srcDB, 3000)
	p := newRangeProbe()
	p.failAfter, p.minAssigned = 25, 10
	p.stop = weir.Unrecoverable(errors.New("injected failure: stop the job"))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	state := filepath.Join(t.TempDir(), "state")
	wait := startWriter(ctx, t, src, 9, 300, 3*time.Millisecond)
	slot := "s_" + name
	env := weir.NewEnv(weir.WithConfig(testutil.FaultConfig(t, 1, state, "20ms", true, nil)))
	log, _ := testutil.Observe(env, nil)
	err := runJob(t, ctx, env, src, dst, slot, p.options(), WithChunkRows(40))
	if err == nil || !strings.Contains(err.Error(), "injected failure") {
		t.Fatalf("first run: want the injected failure, got %v\n%s", err, tail(log.String()))
	}
	env = weir.NewEnv(weir.WithConfig(testutil.FaultConfig(t, 1, state, "20ms", false, nil)))
	log, _ = testutil.Observe(env, nil)
	err = runCapture(ctx, env, src, dst, slot, p.options(), WithChunkRows(40), WithSnapshotParallelism(2))
	wait()
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, tail(log.String()))
	}
	checkReplica(t, srcDB, connect(t, dst))
	checkJournal(t, srcDB, connect(t, dst))
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, n := range p.reads {
		if n > 2 {
			t.Errorf("chunk %s read %d times", k, n)
		}
	}
	if p.suppressed.Load() == 0 {
		t.Errorf("no log change was skipped as seen by its chunk")
	}
}
