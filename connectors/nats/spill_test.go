package nats

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	natsgo "github.com/nats-io/nats.go"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/testutil"
)

// The blob format gives back the records written, headers (several
// values, none) and empty payloads included, and refuses a cut blob.
func TestSpillBlobFormat(t *testing.T) {
	recs := []Record{
		{Subject: "out.a", Header: map[string][]string{"K": {"1", "2"}, "A": {}}, Data: []byte("one")},
		{Subject: "out.b", Data: []byte{}},
		{Subject: "out.c", Header: map[string][]string{"Z": {""}}, Data: bytes.Repeat([]byte{0xff}, 70_000)},
	}
	var buf bytes.Buffer
	if err := writeRecords(&buf, recs); err != nil {
		t.Fatal(err)
	}
	read := func(b []byte) ([]Record, error) {
		rr := recordReader{r: bufio.NewReader(bytes.NewReader(b))}
		var out []Record
		for {
			r, err := rr.next()
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			if err != nil {
				return out, err
			}
			out = append(out, r)
		}
	}
	got, err := read(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, recs) {
		t.Fatalf("read back %+v, want %+v", got, recs)
	}
	for _, cut := range []int{1, 9, buf.Len() - 1} {
		if _, err := read(buf.Bytes()[:cut]); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("blob cut at %d: %v, want io.ErrUnexpectedEOF", cut, err)
		}
	}
}

// TestGoldenTxnSpilled: a spilled handle (testdata/txn-v2.golden, the
// first with Blob) is read by this build; txn-v1.golden, without the
// field, still is (TestGoldenTxn).
func TestGoldenTxnSpilled(t *testing.T) {
	want := &Txn{ID: "demo/nats/0/9a1c-3", Bytes: 5_000_000, Count: 40_000, Blob: checkpoint.BlobName(12, "5e2f0a1b3c4d6e7f")}
	testutil.CodecGolden(t, "testdata/txn-v2.golden", want, *writeGolden)
}

// TestExactlyOnceSpills runs the demo job into a stream with every
// non-empty checkpoint spilled to checkpoint storage (WithSpillBytes(1))
// and failures after pre-commit (the restore aborts, the records are
// replayed) and before commit (the restore commits the handle, reading
// its blob from the restored checkpoint): the stream holds exactly the
// failure-free output, and once the job ended the shared area holds
// exactly the blobs its retained checkpoints reference.
func TestExactlyOnceSpills(t *testing.T) {
	const n, k, p = 6_000, 97, 2
	ts := newServer(t)
	_, js := ts.js(t)
	for i, c := range []struct {
		name   string
		atomic bool
		points []faults.Point
	}{
		{"after-precommit", true, []faults.Point{faults.AfterPreCommit}},
		{"commit", false, []faults.Point{faults.Commit}},
	} {
		t.Run(c.name, func(t *testing.T) {
			stream := "SPILL" + strings.ToUpper(strings.ReplaceAll(c.name, "-", ""))
			outStream(t, js, stream, c.atomic)
			j := newJob(t, p)
			j.plan = onePerAttempt(3, int64(71+i), n, c.points...)
			var mu sync.Mutex
			var sinks []*eoSink[demo.Result]
			res := j.run(t, func(env *weir.Env) {
				results := demo.Aggregate(env, demo.Options{Events: n, Keys: k, Rate: 12_000})
				f := ExactlyOnce(ts.url, stream, demoLine, WithBatchSize(50), WithSpillBytes(1))
				weir.SinkToTransactional(results, func() weir.TwoPhaseCommitSink[demo.Result, *Txn] {
					s := f()
					mu.Lock()
					sinks = append(sinks, s.(*eoSink[demo.Result]))
					mu.Unlock()
					return s
				}).Name("nats").UID("nats")
			})
			if res.err != nil {
				t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
			}
			if res.inj.Fired() != 3 {
				t.Errorf("%d of 3 failures fired: %v", res.inj.Fired(), res.inj.Log())
			}
			if d := demo.Diff(demo.Expected(n, k), readAll(t, js, stream)); d != "" {
				t.Fatalf("stream differs from the failure-free run: %s", d)
			}
			mu.Lock()
			spilled, restored := 0, 0
			for _, s := range sinks {
				spilled += s.spilled
				restored += s.restoredSpilled
			}
			mu.Unlock()
			if spilled == 0 {
				t.Fatal("no transaction was spilled")
			}
			// A crash before the commit leaves a completed checkpoint
			// whose spilled transaction the restore commits from its blob.
			if c.name == "commit" && restored == 0 {
				t.Error("no restore committed a spilled transaction")
			}
			t.Logf("%d transactions spilled, %d restored spilled, %d restarts, %v", spilled, restored, res.restarts, res.inj.Log())
			checkSharedAreaExact(t, filepath.Join(j.stateDir, "nats-test"))
		})
	}
}

// checkSharedAreaExact compares the job's shared area with the files its
// retained checkpoints reference: no blob is left that no retained
// checkpoint references, none referenced is missing.
func checkSharedAreaExact(t *testing.T, jobDir string) {
	t.Helper()
	ents, err := os.ReadDir(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	retained := 0
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "chk-") {
			continue
		}
		md, _, err := storage.LoadPath(context.Background(), filepath.Join(jobDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		retained++
		for _, r := range md.SharedRefs() {
			if !slices.Contains(want, r.Name) {
				want = append(want, r.Name)
			}
		}
	}
	if retained == 0 {
		t.Fatalf("no checkpoint retained in %s", jobDir)
	}
	var got []string
	shared, err := os.ReadDir(filepath.Join(jobDir, checkpoint.SharedDir))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range shared {
		got = append(got, e.Name())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("shared area holds %v, the %d retained checkpoints reference %v", got, retained, want)
	}
}

// noBlobs is the TransactionBlobs of a job without storage for blobs.
type noBlobs struct{}

func (noBlobs) Create(context.Context, func(io.Writer) error) (weir.BlobRef, error) {
	return "", fmt.Errorf("create transaction blob: %w", weir.ErrNoBlobStorage)
}
func (noBlobs) Open(context.Context, weir.BlobRef) (io.ReadCloser, error) {
	return nil, weir.ErrNoBlobStorage
}

// Without storage for blobs (a WEAKLY_CONSISTENT job) a large
// transaction stays in the handle, as before spilling.
func TestSpillWithoutBlobStorageKeepsMessages(t *testing.T) {
	s := &eoSink[string]{o: apply([]Option{WithSpillBytes(1)}), uid: "out", log: logger(nil), subject: "out.x",
		serialize: func(v string, m *natsgo.Msg) error { m.Data = []byte(v); return nil }}
	s.SetTransactionBlobs(noBlobs{})
	txn, _ := s.Begin(t.Context())
	if err := s.Write(t.Context(), txn, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	if err := s.PreCommit(t.Context(), txn); err != nil {
		t.Fatal(err)
	}
	if txn.Blob != "" || len(txn.Msgs) != 2 || s.buffered != txn.Bytes {
		t.Fatalf("handle %+v, buffered %d: want the messages kept", txn, s.buffered)
	}
}
