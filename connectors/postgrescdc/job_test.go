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

	"github.com/jackc/pgx/v5"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/testutil"
)

// probe watches a run through the source's test hooks.
type probe struct {
	mu        sync.Mutex
	reads     map[string]int   // "table/chunk" → times read
	positions map[int64]uint64 // checkpoint id → Done, streaming checkpoints
	chunksAt  map[int64]int    // checkpoint id → chunks read in its state
	completed int64            // the newest completed checkpoint
	allowed   atomic.Uint64    // the most a completed checkpoint lets the slot confirm
	start     atomic.Uint64    // the slot's start point
	bad       []string         // confirmations no completed checkpoint covered
	failAt    int              // fail once at this chunk of items, after a checkpoint with minChunks chunks completed
	minChunks int
	failed    atomic.Bool
	// resumedAt is the first items chunk read after the mid-snapshot
	// failure, and floor the chunks the newest completed checkpoint held
	// when it fired: the snapshot resumes at or after floor.
	resumedAt, floor int
	suppressed       atomic.Int64
	partial          int // checkpoints taken inside a transaction
}

func newProbe() *probe {
	return &probe{reads: map[string]int{}, positions: map[int64]uint64{}, chunksAt: map[int64]int{}}
}

func (p *probe) options() Option {
	return Option{func(c *config) {
		c.afterChunk = func(table string, chunk int) error {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.reads[fmt.Sprint(table, "/", chunk)]++
			if p.failed.Load() && p.resumedAt < 0 && table == "public.items" {
				p.resumedAt = chunk
			}
			if p.failAt > 0 && table == "public.items" && chunk >= p.failAt && !p.failed.Load() && p.chunksAt[p.completed] >= p.minChunks {
				p.failed.Store(true)
				p.floor, p.resumedAt = p.chunksAt[p.completed], -1
				return errors.New("injected failure in the middle of the snapshot")
			}
			return nil
		}
		c.onSnapshot = func(id int64, st savedState) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.start.Store(st.StartLSN)
			n := 0
			for _, t := range st.Tables {
				n += len(t.Chunks)
			}
			p.chunksAt[id] = n
			if st.Streaming {
				p.positions[id] = st.Done
			}
			if st.PartialN > 0 {
				p.partial++
			}
		}
		c.onSuppress = func() { p.suppressed.Add(1) }
		c.onComplete = func(id int64) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.completed = max(p.completed, id)
		}
		c.onConfirm = func(id int64, lsn uint64) {
			p.mu.Lock()
			defer p.mu.Unlock()
			// The position confirmed must be the one some checkpoint up
			// to id recorded, and id must have completed.
			found := false
			for cid, pos := range p.positions {
				if cid <= id && pos == lsn {
					found = true
				}
			}
			if !found || id > p.completed {
				p.bad = append(p.bad, fmt.Sprintf("checkpoint %d (completed: %d) confirms %X, which no completed checkpoint recorded", id, p.completed, lsn))
			}
			if lsn > p.allowed.Load() {
				p.allowed.Store(lsn)
			}
		}
	}}
}

// watchSlot polls the slot's confirmed LSN and reports any that passes
// what completed checkpoints allow.
func (p *probe) watchSlot(ctx context.Context, t testing.TB, admin string, slot string) func() []string {
	var out []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			return
		}
		defer conn.Close(context.Background())
		for ctx.Err() == nil {
			var confirmed *string
			err := conn.QueryRow(ctx, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&confirmed)
			if err == nil && confirmed != nil {
				allowed := max(p.allowed.Load(), p.start.Load())
				l, _ := parseLSN(*confirmed)
				if p.start.Load() != 0 && l > allowed {
					out = append(out, fmt.Sprintf("slot confirmed %s, completed checkpoints allow %X", *confirmed, allowed))
				}
			}
			time.Sleep(15 * time.Millisecond)
		}
	}()
	return func() []string { <-done; return out }
}

// newTestEnv is an environment for one test job.
func newTestEnv(t testing.TB, restartNone bool) *weir.Env {
	return weir.NewEnv(weir.WithConfig(testutil.FaultConfig(t, 1, filepath.Join(t.TempDir(), "state"), "20ms", restartNone, nil)))
}

// runSource runs source → replica sink into dst once.
func runSource(t testing.TB, env *weir.Env, src func() weir.Source[Change], dst string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := weir.FromSource(env, src).Name("cdc").UID("cdc")
	weir.SinkToTransactional(s, Replica(dst)).Name("replica").UID("replica")
	return env.Execute(ctx, "cdcsetup")
}

// runJob runs source → replica sink once, to its idle end.
func runJob(t testing.TB, ctx context.Context, env *weir.Env, src, dst, slot string, opts ...Option) error {
	opts = append([]Option{WithSlot(slot), WithPublication("pub"), WithCreateSlot(), WithCreatePublication(), WithIdleTimeout(1500 * time.Millisecond), WithStatusInterval(200 * time.Millisecond)}, opts...)
	s := weir.FromSource(env, Source(src, capturedTables, opts...)).Name("cdc").UID("cdc")
	weir.SinkToTransactional(s, replicaWith(dst, replicaConfig{journal: "journal"})).Name("replica").UID("replica")
	return env.Execute(ctx, "cdctest")
}

// TestExactlyOnceUnderFailures: a writer changes the captured tables
// (inserts, updates, deletes, key changes, multi-row transactions) while
// the job snapshots and streams them; failures are injected mid-snapshot
// (after a chunk, once a checkpoint holds chunks) and at the checkpoint
// protocol's crash points. At the end the replica equals the source row
// for row, the committed changelog holds every snapshot row and every
// change once, the snapshot resumed by chunk, and the slot never
// confirmed more than a completed checkpoint covered.
//
// Chunks of 40 rows are emitted within one read call; chunks of 700 rows
// exceed the batch size (256) and are emitted over several, each piece
// recorded, so a checkpoint falls inside a chunk.
func TestExactlyOnceUnderFailures(t *testing.T) {
	for _, tc := range []struct{ chunk, failAt, floor int }{{40, 15, 5}, {700, 3, 2}} {
		t.Run(fmt.Sprintf("chunk=%d", tc.chunk), func(t *testing.T) {
			exactlyOnceUnderFailures(t, tc.chunk, tc.failAt, tc.floor)
		})
	}
}

func exactlyOnceUnderFailures(t *testing.T, chunkRows, failAt, floor int) {
	src, name := newDB(t)
	dst, _ := newDB(t)
	srcDB := connect(t, src)
	createTables(t, srcDB, 3000)
	p := newProbe()
	p.failAt, p.minChunks = failAt, floor
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	slot := "s_" + name
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	stop := p.watchSlot(wctx, t, testConnString(), slot)

	env := weir.NewEnv(weir.WithConfig(testutil.FaultConfig(t, 1, filepath.Join(t.TempDir(), "state"), "20ms", false, nil)))
	plan := &faults.Plan{Failures: 4, Seed: 7, Span: 4000, Points: []faults.Point{faults.Process, faults.SnapshotSync, faults.AfterPreCommit, faults.Commit}, OnePerAttempt: true}
	log, inj := testutil.Observe(env, plan)
	var wrote atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		// Slow the snapshot a little so that checkpoints fall inside it.
		wrote.Store(int64(writer(wctx, t, src, 1, 300, 3*time.Millisecond)))
	}()
	err := runJob(t, ctx, env, src, dst, slot, p.options(), WithChunkRows(chunkRows))
	wg.Wait()
	wcancel()
	bad := stop()
	if err != nil {
		t.Fatalf("job: %v\n%s", err, tail(log.String()))
	}
	t.Logf("writer committed %d transactions; %d injected failures fired; snapshot failure fired: %v; %d log changes skipped as seen by their chunk", wrote.Load(), inj.Fired(), p.failed.Load(), p.suppressed.Load())
	checkReplica(t, srcDB, connect(t, dst))
	checkJournal(t, srcDB, connect(t, dst))
	if !p.failed.Load() {
		t.Errorf("the mid-snapshot failure never fired")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resumedAt < p.floor {
		t.Errorf("after the mid-snapshot failure the snapshot resumed at chunk %d of items, though a completed checkpoint held %d chunks: it re-read finished chunks", p.resumedAt, p.floor)
	}
	if n := p.reads[fmt.Sprint("public.items/", p.failAt)]; p.failed.Load() && n < 2 {
		t.Errorf("the chunk that failed was read %d times, want a re-read", n)
	}
	if p.allowed.Load() <= p.start.Load() {
		t.Errorf("no completed checkpoint confirmed a position past the slot's start")
	}
	for _, b := range append(p.bad, bad...) {
		t.Error(b)
	}
}

func tail(s string) string {
	if len(s) > 6000 {
		return "…" + s[len(s)-6000:]
	}
	return s
}

// checkReplica compares the captured tables with their replicas.
func checkReplica(t testing.TB, src, dst *pgx.Conn) {
	t.Helper()
	for _, tc := range []struct {
		table string
		cols  []string
		key   string
	}{
		{"items", []string{"id", "v", "s"}, "id"},
		{"tags", []string{"k", "n"}, `k COLLATE "C"`},
		{"pairs", []string{"a", "b", "v"}, "a, b"},
		{"codes", []string{"code", "n"}, "code"},
		{"events", []string{"at", "id", "v"}, "at, id"},
	} {
		want := tableText(t, src, tc.table, tc.cols, tc.key)
		got := tableText(t, dst, tc.table, tc.cols, tc.key)
		if strings.Join(want, "\n") != strings.Join(got, "\n") {
			t.Errorf("replica of %s differs from the source:\n%s", tc.table, diffLines(want, got))
		}
	}
}

// checkJournal checks the committed changelog: each source row's key was
// read by the snapshot at most once (a row inserted after its chunk was
// read is not), and no change appears twice.
func checkJournal(t testing.TB, src, dst *pgx.Conn) {
	t.Helper()
	rows, err := dst.Query(context.Background(), "SELECT op, tbl, lsn, key, row, count(*) FROM journal GROUP BY 1, 2, 3, 4, 5 HAVING count(*) > 1 LIMIT 10")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var op, tbl, lsn, key, row string
		var n int
		if err := rows.Scan(&op, &tbl, &lsn, &key, &row, &n); err != nil {
			t.Fatal(err)
		}
		t.Errorf("changelog holds %s %s %s key %s (%s) %d times", op, tbl, lsn, key, row, n)
	}
	rows.Close()
	rows, err = dst.Query(context.Background(), "SELECT tbl, key, count(*) FROM journal WHERE op = 'r' GROUP BY 1, 2 HAVING count(*) > 1 LIMIT 10")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var tbl, key string
		var n int
		if err := rows.Scan(&tbl, &key, &n); err != nil {
			t.Fatal(err)
		}
		t.Errorf("the snapshot emitted %s key %s %d times", tbl, key, n)
	}
	rows.Close()
	replayJournal(t, dst)
	var staged, prepared int
	if err := dst.QueryRow(context.Background(), "SELECT (SELECT count(*) FROM weir_cdc_staging), (SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database())").Scan(&staged, &prepared); err != nil {
		t.Fatal(err)
	}
	if staged != 0 || prepared != 0 {
		t.Errorf("after the job FINISHED: %d staged changes not applied, %d prepared transactions left", staged, prepared)
	}
	var reads int
	if err := dst.QueryRow(context.Background(), "SELECT count(*) FROM journal WHERE op = 'r'").Scan(&reads); err != nil {
		t.Fatal(err)
	}
	if reads == 0 {
		t.Errorf("no snapshot rows in the changelog")
	}
}

// replayJournal replays the committed changelog in its order on a model
// of the tables and checks that every change fits the state before it:
// a snapshot read or insert of a key that is absent, an update or delete
// of a key that is present, and an update that changes the row (every
// update the writers make does). A change emitted although its chunk had
// already read its effect breaks one of these.
func replayJournal(t testing.TB, dst *pgx.Conn) {
	t.Helper()
	rows, err := dst.Query(context.Background(), "SELECT op, tbl, key, row FROM journal ORDER BY n")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	model := map[string]string{}
	bad := 0
	for rows.Next() {
		var op, tbl, key, row string
		if err := rows.Scan(&op, &tbl, &key, &row); err != nil {
			t.Fatal(err)
		}
		k := tbl + "/" + key
		cur, ok := model[k]
		var why string
		switch op {
		case "r", "c":
			if ok {
				why = "already present"
			}
			model[k] = row
		case "u":
			if !ok {
				why = "absent"
			} else if cur == row {
				why = "unchanged: the update was already in the row"
			}
			model[k] = row
		case "d":
			if !ok {
				why = "absent"
			}
			delete(model, k)
		}
		if why != "" && bad < 10 {
			bad++
			t.Errorf("changelog: %s of %s: %s", op, k, why)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}
