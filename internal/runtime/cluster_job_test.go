package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/dataflow/dataflowtest"
)

// writeEmptyCheckpoint completes checkpoint id of job in dir without
// state and returns its folder.
func writeEmptyCheckpoint(t *testing.T, dir, job string, id checkpoint.ID) string {
	t.Helper()
	fs, err := storage.Open(dir, job)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs.WriteMetadata(context.Background(), &checkpoint.Metadata{ID: id}); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(fs.JobDir(), fmt.Sprintf("chk-%d", id))
}

// TestRecoveredJobNeverRestoresAnOlderRun: a job submitted with --from
// (checkpoint 500 of another job) whose own folder holds checkpoint 3 of
// an earlier run under its name took checkpoint 501, then its JobManager
// died. When 501 does not verify, the recovered job restores its --from
// point, not checkpoint 3, which is another history (the sinks committed
// what 500 covers; 3 would replay and duplicate it).
func TestRecoveredJobNeverRestoresAnOlderRun(t *testing.T) {
	dir := t.TempDir()
	from := writeEmptyCheckpoint(t, dir, "src", 500)
	writeEmptyCheckpoint(t, dir, "j", 3)
	own := writeEmptyCheckpoint(t, dir, "j", 501)
	if err := os.WriteFile(filepath.Join(own, "_metadata"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := JobConfig{JobName: "j", CheckpointDir: dir, FromPath: from, NumRetained: 1}
	cj, err := NewClusterJob(context.Background(), sourceGraph(), cfg, ClusterJobConfig{Slots: &fakeSlots{}, ResumeFrom: 501})
	if err != nil {
		t.Fatal(err)
	}
	if rp := cj.jm.initial; rp == nil || rp.md.ID != 500 {
		t.Fatalf("recovered job restores %v, want checkpoint 500 (its --from point)", rp)
	}
	if cj.jm.firstOwn < 501 {
		t.Fatalf("first own checkpoint %d: it would take an id below the previous run's", cj.jm.firstOwn)
	}
	// Once the run has a checkpoint that verifies, that is restored.
	writeEmptyCheckpoint(t, dir, "j", 502)
	cj, err = NewClusterJob(context.Background(), sourceGraph(), cfg, ClusterJobConfig{Slots: &fakeSlots{}, ResumeFrom: 501})
	if err != nil {
		t.Fatal(err)
	}
	if rp := cj.jm.initial; rp == nil || rp.md.ID != 502 {
		t.Fatalf("recovered job restores %v, want its own checkpoint 502", rp)
	}
}

// sourceGraph is one source vertex: nothing crosses TaskManagers, so its
// nodes need no codecs.
func sourceGraph() *dataflow.Graph { return dataflowtest.Graph(dataflowtest.Node("src", 2)) }
