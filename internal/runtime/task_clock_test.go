package runtime

import (
	"testing"
	"time"

	"github.com/weirstream/weir/internal/testutil/clocktest"
)

// TestAlignDeadlineClockJump (fault class 14): the alignment deadline a
// barrier handler arms (checkpoint timestamp + aligned-checkpoint-timeout)
// becomes a deadline on the task's monotonic clock, bounded by the
// timeout. A timestamp that crossed a wire has no monotonic reading, so
// the wall clock's steps would otherwise move it by hours.
func TestAlignDeadlineClockJump(t *testing.T) {
	const timeout = 100 * time.Millisecond
	clk := clocktest.New()
	tk := &Task{now: clk.Now, rec: barrierRecovery{}}
	tk.ua.alignTimeout = timeout
	wire := func() time.Time { return time.Unix(0, clk.Now().UnixNano()) } // as decoded from a barrier

	at := wire().Add(timeout)
	clk.Jump(-time.Hour)
	if left := tk.alignDeadline(at).Sub(clk.Now()); left <= 0 || left > timeout {
		t.Fatalf("after a -1h step the alignment timeout is %s away, want within (0, %s]", left, timeout)
	}
	at = wire().Add(timeout)
	clk.Jump(time.Hour)
	if left := tk.alignDeadline(at).Sub(clk.Now()); left > 0 {
		t.Fatalf("after a +1h step past it the alignment timeout is %s away, want due", left)
	}
	// Once armed, the deadline is monotonic: a later step does not move it.
	armed := tk.alignDeadline(wire().Add(timeout))
	clk.Jump(-time.Hour)
	if left := armed.Sub(clk.Now()); left <= 0 || left > timeout {
		t.Fatalf("an armed alignment deadline moved with a -1h step: %s away", left)
	}
	clk.Jump(2 * time.Hour)
	if !clk.Now().Before(armed) && time.Until(armed) > 0 {
		t.Fatal("an armed alignment deadline expired with a +2h step")
	}
}
