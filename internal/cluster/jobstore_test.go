package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/jobstatus"
)

// TestJobStoreBadRecords: a corrupt job.json and a job folder without one
// (a crash between creating the folder and the first rename) are each
// reported naming the file and the fix; the good record still loads.
func TestJobStoreBadRecords(t *testing.T) {
	dir := t.TempDir()
	s := jobStore{dir: dir}
	good := jobRecord{Spec: deployment.JobSpec{Name: "good", Kind: "demo"}, State: jobstatus.StateRunning, Submitted: time.Unix(1, 0)}
	if err := s.save(good); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "jobs", "torn"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.path("torn"), []byte(`{"spec": {"name": "to`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "jobs", "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	recs, errs := s.load()
	if len(recs) != 1 || recs[0].Spec.Name != "good" {
		t.Fatalf("records %v, want good only", recs)
	}
	if len(errs) != 2 {
		t.Fatalf("errors %v, want 2", errs)
	}
	msgs := errs[0].Error() + "\n" + errs[1].Error()
	for _, want := range []string{
		"job record " + s.path("torn") + " is corrupt",
		"remove the folder " + filepath.Join(dir, "jobs", "torn"),
		"job folder " + filepath.Join(dir, "jobs", "empty") + " has no job.json",
		"remove the folder",
		"--from",
	} {
		if !strings.Contains(msgs, want) {
			t.Errorf("messages do not say %q:\n%s", want, msgs)
		}
	}
}
