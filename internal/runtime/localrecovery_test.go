package runtime

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/weirstream/weir/internal/state"
)

// A finished job's local-recovery folder goes, with everything in it;
// another job's stays, and nothing is touched with local recovery off.
func TestRemoveLocalRecovery(t *testing.T) {
	parent := t.TempDir()
	b := state.BackendConfig{LocalRecovery: true, LSM: state.LSMConfig{Dir: parent}}
	mine, other := LocalRecoveryJobDir(b, "demo/1"), LocalRecoveryJobDir(b, "other")
	if want := filepath.Join(parent, "weir-local-recovery", "demo_1"); mine != want {
		t.Fatalf("LocalRecoveryJobDir = %s, want %s", mine, want)
	}
	for _, d := range []string{mine, other} {
		if err := os.MkdirAll(filepath.Join(d, "agg-0.keyed"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "agg-0.keyed", "s-000001.sst"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	off := &JobMaster{cfg: JobConfig{JobName: "demo/1", StateBackend: state.BackendConfig{LSM: b.LSM}}, log: slog.New(slog.DiscardHandler)}
	off.removeLocalRecovery()
	if _, err := os.Stat(mine); err != nil {
		t.Fatalf("local recovery off, yet: %v", err)
	}
	jm := &JobMaster{cfg: JobConfig{JobName: "demo/1", StateBackend: b}, log: slog.New(slog.DiscardHandler)}
	jm.removeLocalRecovery()
	if _, err := os.Stat(mine); !os.IsNotExist(err) {
		t.Fatalf("%s after the job finished: %v, want it gone", mine, err)
	}
	if _, err := os.Stat(filepath.Join(other, "agg-0.keyed", "s-000001.sst")); err != nil {
		t.Fatalf("another job's folder: %v", err)
	}
}
