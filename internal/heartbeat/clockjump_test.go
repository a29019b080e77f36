package heartbeat

import (
	"testing"
	"time"

	"github.com/weirstream/weir/internal/testutil/clocktest"
)

// TestWallClockJump (fault class 14): fed time.Now's values, as the
// Dispatcher and the TaskManager's session are, a Monitor measures silence
// on the monotonic clock. A step of the wall clock by ±1 h neither loses a
// live peer (forward) nor hides a silent one for an hour (back), and a
// heartbeat after a step back still moves the deadline. Time passing is
// Add on the clock's values, which moves both readings, as real time does.
func TestWallClockJump(t *testing.T) {
	const timeout = 10 * time.Second
	for _, jump := range []time.Duration{time.Hour, -time.Hour} {
		t.Run(jump.String(), func(t *testing.T) {
			clk := clocktest.New()
			m := NewMonitor[string](timeout)
			t0 := clk.Now()
			m.Seen("tm-1", t0)
			clk.Jump(jump)
			now := clk.Now()
			if lost := m.Expired(now); len(lost) != 0 {
				t.Fatalf("a %s step of the wall clock lost %v", jump, lost)
			}
			at, _ := m.NextDeadline()
			if left := at.Sub(now); left <= 0 || left > timeout {
				t.Fatalf("deadline %s away after the step, want within (0, %s]", left, timeout)
			}
			// A heartbeat after the step is newer than the one before it.
			later := now.Add(time.Second)
			m.Seen("tm-1", later)
			if d, _ := m.Deadline("tm-1"); !d.Equal(later.Add(timeout)) {
				t.Fatalf("a heartbeat after the step left the deadline at %s, want %s", d.Sub(t0), later.Add(timeout).Sub(t0))
			}
			if lost := m.Expired(later.Add(timeout - time.Millisecond)); len(lost) != 0 {
				t.Fatalf("lost %v before its timeout", lost)
			}
			// A silent peer is still lost on time.
			if lost := m.Expired(later.Add(timeout)); len(lost) != 1 {
				t.Fatalf("a peer silent for the timeout after a %s step: lost %v, want [tm-1]", jump, lost)
			}
		})
	}
	// The control: the same times without their monotonic reading (what a
	// time that went through UnixMilli or Round(0) becomes) do jump.
	clk := clocktest.New()
	m := NewMonitor[string](timeout)
	m.Seen("tm-1", clk.Now().Round(0))
	clk.Jump(time.Hour)
	if lost := m.Expired(clk.Now().Round(0)); len(lost) != 1 {
		t.Fatalf("control: wall-clock times did not see the jump (lost %v): the test would prove nothing", lost)
	}
}
