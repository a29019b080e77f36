package weir_test

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/testutil"
)

// spillTxn is the handle of spillSink: its records inline, or, past the
// sink's bound, the blob they were spilled to.
type spillTxn struct {
	ID    string
	Recs  []int64
	Blob  string
	Count int
}

// spillOut is what spillSinks committed, by transaction id (a commit is
// idempotent: a transaction committed again adds nothing).
type spillOut struct {
	mu        sync.Mutex
	committed map[string][]int64
	// spilled counts the blobs created, restoredBlobs the blobs a restore
	// read back to commit a restored transaction.
	spilled, restoredBlobs atomic.Int64
}

func (o *spillOut) all() []int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []int64
	for _, r := range o.committed {
		out = append(out, r...)
	}
	slices.Sort(out)
	return out
}

// spillSink is a two-phase-commit sink that keeps a transaction of more
// than bound records in a transaction blob (weir.BlobSink).
type spillSink struct {
	out       *spillOut
	bound     int
	blobs     weir.TransactionBlobs
	prefix    string
	n         int
	restoring bool // between Open and the first Begin: restored commits
}

func (s *spillSink) SetTransactionBlobs(b weir.TransactionBlobs) { s.blobs = b }

func (s *spillSink) Open(_ context.Context, rc *weir.RuntimeContext, _ []*spillTxn) error {
	var u [6]byte
	_, _ = rand.Read(u[:])
	s.prefix = fmt.Sprintf("%d-%s", rc.Subtask(), hex.EncodeToString(u[:]))
	s.restoring = true
	return nil
}

func (s *spillSink) Begin(context.Context) (*spillTxn, error) {
	s.restoring = false
	s.n++
	return &spillTxn{ID: fmt.Sprintf("%s-%d", s.prefix, s.n)}, nil
}

func (s *spillSink) Write(_ context.Context, txn *spillTxn, batch []int64) error {
	txn.Recs = append(txn.Recs, batch...)
	txn.Count = len(txn.Recs)
	return nil
}

func (s *spillSink) PreCommit(ctx context.Context, txn *spillTxn) error {
	if len(txn.Recs) <= s.bound {
		return nil
	}
	ref, err := s.blobs.Create(ctx, func(w io.Writer) error {
		var b []byte
		for _, v := range txn.Recs {
			b = binary.AppendVarint(b, v)
		}
		_, err := w.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	s.out.spilled.Add(1)
	txn.Blob, txn.Recs = string(ref), nil
	return nil
}

func (s *spillSink) Commit(ctx context.Context, txn *spillTxn) error {
	// The blob is read even for a transaction committed already (by an
	// earlier run), so that tests see a restore read it.
	recs := txn.Recs
	if txn.Blob != "" {
		r, err := s.blobs.Open(ctx, weir.BlobRef(txn.Blob))
		if err != nil {
			return err
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return err
		}
		for len(b) > 0 {
			v, n := binary.Varint(b)
			if n <= 0 {
				return fmt.Errorf("blob %s: bad varint", txn.Blob)
			}
			recs, b = append(recs, v), b[n:]
		}
		if len(recs) != txn.Count {
			return fmt.Errorf("blob %s: %d records, handle says %d", txn.Blob, len(recs), txn.Count)
		}
		if s.restoring {
			s.out.restoredBlobs.Add(1)
		}
	}
	s.out.mu.Lock()
	if _, done := s.out.committed[txn.ID]; !done {
		s.out.committed[txn.ID] = recs
	}
	s.out.mu.Unlock()
	return nil
}

func (s *spillSink) Abort(context.Context, *spillTxn) error { return nil }
func (s *spillSink) Close(context.Context) error            { return nil }

// TestBlobSinkExactUnderFaults: a sink that spills every transaction of
// more than 8 records into a transaction blob commits each record exactly
// once with crashes after pre-commit (the restore aborts and replays) and
// before commit (the restore commits from the handle, reading the blob
// back through the restored checkpoint); and once the job ended the
// shared area holds exactly the blobs the retained checkpoints reference.
func TestBlobSinkExactUnderFaults(t *testing.T) {
	const n = 20_000
	cfg := testConfig(t, 2, "15ms", config.CheckpointsNumRetained, "2")
	env, log := newEnv(cfg)
	testutil.KeepFinishedCheckpoints(env)
	inj := injector(env, 6, 11, n, faults.AfterPreCommit, faults.Commit, faults.Process)
	out := &spillOut{committed: map[string][]int64{}}
	src := weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(n), datagen.WithRate(100_000))).UID("numbers")
	weir.SinkToTransactional(src, func() weir.TwoPhaseCommitSink[int64, *spillTxn] { return &spillSink{out: out, bound: 8} }).UID("spill")
	if err := env.Execute(t.Context(), "blobs"); err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log)
	}
	got := out.all()
	if len(got) != n {
		t.Fatalf("committed %d records, want %d", len(got), n)
	}
	for i, v := range got {
		if v != int64(i) {
			t.Fatalf("committed records are not 0..%d exactly once: position %d holds %d", n-1, i, v)
		}
	}
	if out.spilled.Load() == 0 {
		t.Fatal("no transaction was spilled; the test needs blobs")
	}
	t.Logf("%d blobs, %d read back by a restore, failures: %v", out.spilled.Load(), out.restoredBlobs.Load(), inj.Log())
	if inj.Fired() == 0 {
		t.Fatal("no failure fired")
	}
	dir, err := cfg.Get(config.CheckpointsDir)
	if err != nil {
		t.Fatal(err)
	}
	checkSharedBlobsExact(t, filepath.Join(dir, "blobs"))
}

// checkSharedBlobsExact compares the shared area of the job folder with
// the files its retained checkpoints reference: nothing is left that no
// retained checkpoint references, nothing referenced is missing.
func checkSharedBlobsExact(t *testing.T, jobDir string) {
	t.Helper()
	ents, err := os.ReadDir(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	retained := 0
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "chk-") {
			continue
		}
		md, _, err := storage.LoadPath(context.Background(), filepath.Join(jobDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		retained++
		for _, r := range md.SharedRefs() {
			want[r.Name] = true
		}
	}
	if retained == 0 {
		t.Fatalf("no checkpoint retained in %s: %v", jobDir, ents)
	}
	var got, w []string
	shared, err := os.ReadDir(filepath.Join(jobDir, checkpoint.SharedDir))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range shared {
		got = append(got, e.Name())
	}
	for n := range want {
		w = append(w, n)
	}
	slices.Sort(got)
	slices.Sort(w)
	if !slices.Equal(got, w) {
		t.Fatalf("shared area holds %d files, the %d retained checkpoints reference %d:\nholds      %v\nreferenced %v", len(got), retained, len(w), got, w)
	}
}

// runSpillUntilSavepoint runs an unbounded source into a spillSink (from
// the savepoint from, if given) and stops it with a savepoint once a few
// checkpoints completed; it returns the savepoint's folder.
func runSpillUntilSavepoint(t *testing.T, out *spillOut, from string) string {
	t.Helper()
	env, log := newEnv(testConfig(t, 1, "15ms"))
	if from != "" {
		hooks.Plan(env).FromPath = from
	}
	src := weir.FromSource(env, datagen.New(ints(0), datagen.WithRate(20_000))).UID("numbers")
	weir.SinkToTransactional(src, func() weir.TwoPhaseCommitSink[int64, *spillTxn] { return &spillSink{out: out, bound: 8} }).UID("spill")
	var sp string
	var spErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		st := hooks.Plan(env).Status
		for st.CompletedCheckpoints.Load() < 4 && st.State() != jobstatus.StateFailed {
			time.Sleep(5 * time.Millisecond)
		}
		sp, spErr = hooks.Plan(env).Control.StopWithSavepoint(context.Background(), filepath.Join(t.TempDir(), "sp"))
	}()
	if err := env.Execute(t.Context(), "blobs-sp"); err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log)
	}
	<-done
	if spErr != nil {
		t.Fatal(spErr)
	}
	return sp
}

// TestBlobSinkSavepoint: a savepoint holds copies of its blobs in its
// own folder and references nothing in the job's shared area; a restore
// from it (into another state folder) reads the savepoint's pending
// transaction back from the copy, and across both runs every record is
// committed exactly once.
func TestBlobSinkSavepoint(t *testing.T) {
	out := &spillOut{committed: map[string][]int64{}}
	sp := runSpillUntilSavepoint(t, out, "")
	md, _, err := storage.LoadPath(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	blobs := 0
	for _, op := range md.Operators {
		for _, st := range op.Subtasks {
			for _, f := range st.State.Blobs {
				if !strings.HasPrefix(f.Path, fmt.Sprintf("chk-%d/blob-", md.ID)) {
					t.Errorf("savepoint blob %s is not in the savepoint's folder", f.Path)
				}
				blobs++
			}
		}
	}
	if blobs == 0 {
		t.Fatal("the savepoint holds no blob; the test needs a spilled pending transaction")
	}
	if refs := md.SharedRefs(); len(refs) != 0 {
		t.Fatalf("the savepoint references the job's shared area: %v", refs)
	}
	before := out.restoredBlobs.Load()
	runSpillUntilSavepoint(t, out, sp)
	if out.restoredBlobs.Load() == before {
		t.Error("the restore read no blob from the savepoint")
	}
	got := out.all()
	for i, v := range got {
		if v != int64(i) {
			t.Fatalf("committed records are not 0..%d exactly once: position %d holds %d", len(got)-1, i, v)
		}
	}
	t.Logf("%d records, %d blobs in the savepoint", len(got), blobs)
}
