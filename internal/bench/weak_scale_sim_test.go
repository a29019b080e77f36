package bench

import (
	"math"
	"testing"
)

// TestSuccessAtScale checks the scale section's simulation: 32 tasks
// whose snapshots each fail with probability 2% complete a "global" round
// (every task's snapshot, what a barrier checkpoint needs) about
// 0.98^32 = 52% of the time, while 98% of the per-task snapshots complete
// and each is a restore point on its own.
func TestSuccessAtScale(t *testing.T) {
	global, perTask := successAtScale(32, 0.02, 20000, 1)
	t.Logf("32 tasks, p(fail)=0.02: global %.3f, per task %.3f", global, perTask)
	if want := math.Pow(0.98, 32); math.Abs(global-want) > 0.02 {
		t.Errorf("global share %.3f, want about %.3f", global, want)
	}
	if math.Abs(perTask-0.98) > 0.005 {
		t.Errorf("per-task share %.3f, want about 0.98", perTask)
	}
	if g, p := successAtScale(8, 0, 100, 2); g != 1 || p != 1 {
		t.Errorf("without failures: global %.3f, per task %.3f, want 1 and 1", g, p)
	}
	if g, p := successAtScale(0, 0.5, 100, 2); g != 0 || p != 0 {
		t.Errorf("no tasks: %v %v", g, p)
	}
}
