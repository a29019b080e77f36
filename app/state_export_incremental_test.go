package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/checkpoint/storage"
)

// exportOK runs state export with args and returns its output; a failure
// fails the test.
func exportOK(t *testing.T, args ...string) string {
	t.Helper()
	p, stdout, stderr := testProgram(nil)
	if code := p.Run(context.Background(), append([]string{"state", "export"}, args...)); code != 0 {
		t.Fatalf("state export %v: exit %d: %s", args, code, stderr)
	}
	return stdout.String()
}

func goldenDir(parts ...string) string {
	return filepath.Join(append([]string{"..", "testdata", "golden"}, parts...)...)
}

// TestStateExportIncrementalGoldens exports the committed incremental
// (lsm) goldens: each export is, line for line, the export of the
// savepoint of the same job at the same point, and the keyed golden's
// holds every key of the golden job (numbers 0…399 keyed by v%23) with the
// state that job computed.
func TestStateExportIncrementalGoldens(t *testing.T) {
	for _, c := range []struct{ incremental, savepoint string }{
		{goldenDir("lsm-incremental-v3", "golden", "chk-1"), goldenDir("lsm-savepoint-v3", "savepoint")},
		{goldenDir("windows-lsm-incremental-v3", "golden", "chk-1"), goldenDir("windows-heap-savepoint-v3", "savepoint")},
	} {
		got, want := exportOK(t, "--from", c.incremental), exportOK(t, "--from", c.savepoint)
		if got != want || strings.Count(got, "\n") < 100 {
			t.Errorf("export of %s (%d lines) differs from that of %s (%d lines)", c.incremental, strings.Count(got, "\n"), c.savepoint, strings.Count(want, "\n"))
		}
	}

	// The stores' copies go under state.backend.lsm.dir (made if need
	// be) and are gone afterwards.
	lsmDir := filepath.Join(t.TempDir(), "lsm")
	if got := exportOK(t, "--from", goldenDir("lsm-incremental-v3", "golden", "chk-1"), "-D", "state.backend.lsm.dir="+lsmDir); got != exportOK(t, "--from", goldenDir("lsm-savepoint-v3", "savepoint")) {
		t.Error("export with state.backend.lsm.dir differs")
	}
	if ents, err := os.ReadDir(lsmDir); err != nil || len(ents) != 0 {
		t.Errorf("state.backend.lsm.dir %s: %d entries left, %v; want it made and empty", lsmDir, len(ents), err)
	}

	type line struct {
		State, Kind string
		Key         int64
		Value       json.RawMessage
		Timestamp   int64
	}
	out := exportOK(t, "--from", goldenDir("lsm-incremental-v3", "golden", "chk-1"), "--operator", "golden")
	type keyState struct {
		count, sum, timer int64
		user              string
		recent            []string
		byMod             int
	}
	got := map[int64]*keyState{}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var e line
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		if e.Kind == "operator-list" {
			continue
		}
		ks := got[e.Key]
		if ks == nil {
			ks = &keyState{}
			got[e.Key] = ks
		}
		switch e.State + "/" + e.Kind {
		case "total/value":
			var v struct {
				User  string
				Count int64
			}
			json.Unmarshal(e.Value, &v)
			ks.user, ks.count = v.User, v.Count
		case "sum/reducing":
			json.Unmarshal(e.Value, &ks.sum)
		case "recent/list":
			json.Unmarshal(e.Value, &ks.recent)
		case "by-mod/map":
			ks.byMod++
		case "/event-timer":
			ks.timer = e.Timestamp
		default:
			t.Errorf("unexpected line %s", l)
		}
	}
	want := map[int64]*keyState{}
	for v := range int64(400) {
		k := v % 23
		ks := want[k]
		if ks == nil {
			ks = &keyState{user: fmt.Sprint("user-", k), timer: 1_000_000 + k}
			want[k] = ks
		}
		ks.count++
		ks.sum += v
		ks.recent = append(ks.recent, fmt.Sprint(v))
		if len(ks.recent) > 2 {
			ks.recent = ks.recent[1:]
		}
		ks.byMod = min(ks.byMod+1, 4)
	}
	if len(got) != 23 {
		t.Fatalf("export holds %d keys, want the golden job's 23", len(got))
	}
	for k, w := range want {
		if g := got[k]; g == nil || fmt.Sprint(*g) != fmt.Sprint(*w) {
			t.Errorf("key %d: %+v, want %+v", k, g, w)
		}
	}
}

// phased emits 0, 1, … up to the limit the test raises, its position in
// operator list state.
type phased struct {
	limit, emitted *atomic.Int64
	next           int64
	pos            *weir.OperatorList[int64]
}

func (s *phased) Open(_ context.Context, rc *weir.RuntimeContext) (err error) {
	s.pos, err = weir.GetOperatorListState[int64](rc, "pos")
	return err
}

func (s *phased) Read(_ context.Context, dst []int64, max int) ([]int64, error) {
	for ; s.next < s.limit.Load() && max > 0; max-- {
		dst = append(dst, s.next)
		s.next++
		s.emitted.Add(1)
	}
	time.Sleep(time.Millisecond)
	return dst, nil
}

func (s *phased) SnapshotState(int64) error   { s.pos.Update([]int64{s.next}); return nil }
func (s *phased) Close(context.Context) error { return nil }

// TestStateExportFreshIncremental runs the exporting job on the lsm
// backend with incremental checkpoints, one checkpoint after each of three
// phases of records (so the last one's stores hold files of several
// increments), and exports the last checkpoint: the same lines as the
// savepoint the job then takes, TTL timestamps included.
func TestStateExportFreshIncremental(t *testing.T) {
	ctx := t.Context()
	root := t.TempDir()
	cfg := weir.NewConfig()
	for k, v := range map[string]string{"state.checkpoints.dir": root, "state.backend.type": "lsm", "state.backend.incremental": "true", "state.checkpoints.num-retained": "3"} {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	var limit, emitted atomic.Int64
	env := weir.NewEnv(weir.WithConfig(cfg))
	src := weir.FromSource(env, func() weir.Source[int64] { return &phased{limit: &limit, emitted: &emitted} }).UID("numbers").Parallelism(1)
	keyed := weir.KeyBy(src, func(v int64) string { return fmt.Sprintf("k%d", v%3) })
	out := weir.Process(keyed, func() weir.KeyedProcessFunction[string, int64, int64] { return &exporting{} }).UID("stats").Parallelism(2)
	weir.SinkTo(out, func() weir.Sink[int64] { return discard{} })
	job, err := env.Start(ctx, "inc")
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	for _, n := range []int64{40, 70, 100} {
		limit.Store(n)
		for emitted.Load() < n {
			time.Sleep(time.Millisecond)
		}
		// The barrier follows every record emitted before it.
		for {
			if last, err = job.Checkpoint(ctx); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond) // not running yet
		}
		for job.Stats().LastCheckpointID < last {
			time.Sleep(time.Millisecond)
		}
	}
	chk := filepath.Join(root, "inc", fmt.Sprintf("chk-%d", last))
	md, _, err := storage.LoadPath(ctx, chk)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range md.Operator("stats").Subtasks {
		if h := st.State.Incremental; h == nil || len(h.Shared) < 2 {
			t.Fatalf("subtask %d of the last checkpoint is not an incremental store of several files: %+v", st.Subtask, st.State)
		}
	}
	got := exportOK(t, "--from", chk)
	sp, err := job.Stop(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Wait(); err != nil {
		t.Fatal(err)
	}
	want := exportOK(t, "--from", sp)
	if got != want || !strings.Contains(got, `"key":"k1"`) || !strings.Contains(got, `"ttlTimestamp"`) {
		t.Fatalf("export of the incremental checkpoint:\n%s\nexport of the savepoint:\n%s", got, want)
	}
}
