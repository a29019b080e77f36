package runtime

import (
	"context"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/restart"
)

// stubMode is a RecoveryMode that changes nothing.
type stubMode struct{}

func (stubMode) NewJob(JobInfo) JobRecovery { return barrierJobRecovery{} }
func (stubMode) InitialRestore(context.Context, JobMasterView) (TaskRestores, error) {
	return TaskRestores{}, nil
}

// TestWeakNeedsItsRecoveryMode: the runtime does not import the
// WEAKLY_CONSISTENT runtime (internal/runtime/weakrt), so a job in that
// mode without JobConfig.Recovery is refused up front, naming the field,
// rather than run with barrier-mode wiring; the barrier modes ignore the
// field.
func TestWeakNeedsItsRecoveryMode(t *testing.T) {
	base := JobConfig{JobName: "j", CheckpointDir: "unused", NumRetained: 1, Restart: restart.NewFixedDelay(5, 0)}
	weak := base
	weak.Weak = true
	if err := weak.fill(); err == nil || !strings.Contains(err.Error(), "JobConfig.Recovery") {
		t.Fatalf("Weak without Recovery: fill = %v, want an error naming JobConfig.Recovery", err)
	}
	weak.Recovery = stubMode{}
	if err := weak.fill(); err != nil {
		t.Fatal(err)
	}
	if weak.recoveryMode() == nil {
		t.Fatal("Weak with Recovery: no recovery mode")
	}
	barrier := base
	barrier.Recovery = stubMode{}
	if err := barrier.fill(); err != nil {
		t.Fatal(err)
	}
	if m := barrier.recoveryMode(); m != nil {
		t.Fatalf("a barrier mode holds recovery mode %T", m)
	}
}
