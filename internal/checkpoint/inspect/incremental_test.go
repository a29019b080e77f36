package inspect

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/testutil"
)

// incrementalCheckpoint runs the demo job on the lsm backend with
// incremental checkpoints and returns its job folder and its newest
// checkpoint that references shared files (the final checkpoint, taken
// after every source ended, may reference none).
func incrementalCheckpoint(t *testing.T) (jobDir, chk string) {
	t.Helper()
	var id checkpoint.ID
	dir := t.TempDir()
	env := weir.NewEnv(weir.WithConfig(testutil.FaultConfig(t, 2, filepath.Join(dir, "state"), "10ms", false, map[string]string{
		config.StateBackendType: "lsm", config.StateBackendIncremental: "true", config.StateBackendLSMDir: t.TempDir(),
		config.CheckpointsNumRetained: "3"})))
	testutil.Observe(env, nil)
	testutil.KeepFinishedCheckpoints(env) // the test inspects the finished run's checkpoints
	demo.Build(env, demo.Options{Events: 20_000, Keys: 37, Rate: 50_000, Out: filepath.Join(dir, "out")})
	if err := env.Execute(context.Background(), "demo"); err != nil {
		t.Fatal(err)
	}
	jobDir = filepath.Join(dir, "state", "demo")
	chks, err := filepath.Glob(filepath.Join(jobDir, "chk-*"))
	if err != nil || len(chks) == 0 {
		t.Fatalf("no checkpoint in %s (%v)", jobDir, err)
	}
	for _, c := range chks {
		md, _, err := storage.LoadPath(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if len(md.SharedRefs()) > 0 && (chk == "" || md.ID > id) {
			chk, id = c, md.ID
		}
	}
	if chk == "" {
		t.Fatalf("no checkpoint of %v references shared files", chks)
	}
	return jobDir, chk
}

// A real incremental checkpoint: the shared-file section is exactly the
// files the metadata references, each with the subtasks that use it; each
// store's sizes add up; totals agree.
func TestInspectIncremental(t *testing.T) {
	_, chk := incrementalCheckpoint(t)
	r, err := Inspect(context.Background(), chk)
	if err != nil {
		t.Fatal(err)
	}
	md, _, err := storage.LoadPath(context.Background(), chk)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, ref := range md.SharedRefs() {
		want = append(want, ref.StateFile().Path)
	}
	slices.Sort(want)
	var got []string
	var sharedBytes int64
	for _, f := range r.SharedFiles {
		got = append(got, f.File)
		sharedBytes += f.Size
		if len(f.ReferencedBy) == 0 || f.Local == "" || f.Size <= 0 {
			t.Errorf("shared file %+v: want size, local name and referencing subtasks", f)
		}
	}
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Fatalf("shared files %v, metadata references %v", got, want)
	}
	stores, refs := 0, 0
	for _, op := range r.Operators {
		for _, s := range op.Subtasks {
			inc := s.Incremental
			if inc == nil {
				continue
			}
			stores++
			refs += inc.SharedFiles
			var private int64
			for _, p := range inc.Private {
				private += p.Size
			}
			if sum := inc.SharedBytes + private + inc.TimersSize; sum != inc.FullSize || inc.UploadedSize > inc.FullSize || len(inc.States) == 0 || inc.KeyGroups != inc.Assigned {
				t.Errorf("%s subtask %d: store %+v: shared+private+timers %d, want full size, uploaded <= full, a catalogue, its own range", op.UID, s.Index, inc, sum)
			}
		}
	}
	nrefs := 0
	for _, f := range r.SharedFiles {
		nrefs += len(f.ReferencedBy)
	}
	if tot := r.Totals; stores != 2 || tot.Stores != 2 || tot.SharedFiles != len(want) || tot.SharedBytes != sharedBytes || nrefs != refs {
		t.Errorf("totals %+v: %d stores, %d references (shared section %d); want 2 stores at parallelism 2", tot, stores, refs, nrefs)
	}
}

// A corrupted or missing shared file fails the inspection, naming it.
func TestInspectIncrementalDamagedShared(t *testing.T) {
	jobDir, chk := incrementalCheckpoint(t)
	r, err := Inspect(context.Background(), chk)
	if err != nil {
		t.Fatal(err)
	}
	victim := r.SharedFiles[len(r.SharedFiles)/2].File
	abs := filepath.Join(jobDir, filepath.FromSlash(victim))
	b, err := os.ReadFile(abs)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(abs, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Inspect(context.Background(), chk)
	if !errors.Is(err, storage.ErrCorrupt) || !strings.Contains(err.Error(), victim) {
		t.Fatalf("corrupt %s: err %v, want ErrCorrupt naming it", victim, err)
	}
	if err := os.Remove(abs); err != nil {
		t.Fatal(err)
	}
	_, err = Inspect(context.Background(), chk)
	if err == nil || errors.Is(err, ErrNotCheckpoint) || !strings.Contains(err.Error(), victim) {
		t.Fatalf("missing %s: err %v, want a damaged-checkpoint error naming it", victim, err)
	}
}
