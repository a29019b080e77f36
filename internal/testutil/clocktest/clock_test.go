package clocktest

import (
	"testing"
	"time"
)

func TestJumpMovesWallOnly(t *testing.T) {
	c := New()
	before := c.Now()
	c.Jump(time.Hour)
	after := c.Now()
	if d := after.Sub(before); d < 0 || d > time.Second {
		t.Fatalf("monotonic difference across a +1h jump is %s, want about 0", d)
	}
	if d := after.UnixMilli() - before.UnixMilli(); d < time.Hour.Milliseconds() || d > time.Hour.Milliseconds()+1000 {
		t.Fatalf("wall difference across a +1h jump is %d ms, want about 3600000", d)
	}
	// Without the monotonic reading a duration jumps with the wall clock:
	// what code that goes through Round(0) or UnixMilli computes.
	if d := after.Round(0).Sub(before.Round(0)); d < time.Hour {
		t.Fatalf("wall-only difference is %s, want at least 1h", d)
	}
	c.Jump(-2 * time.Hour)
	back := c.Now()
	if back.Before(after) || back.Sub(after) > time.Second {
		t.Fatalf("monotonic order broken by a -2h jump: %s after %s", back.Sub(after), after)
	}
	if back.UnixMilli() >= before.UnixMilli() {
		t.Fatalf("wall clock did not go back: %d >= %d", back.UnixMilli(), before.UnixMilli())
	}
	if c.Offset() != -time.Hour || c.Jumps() != 2 {
		t.Fatalf("offset %s jumps %d, want -1h 2", c.Offset(), c.Jumps())
	}
	// Timers and deadlines derived from it keep monotonic time.
	deadline := before.Add(50 * time.Millisecond)
	if !c.Now().Before(deadline) && time.Since(before) < 50*time.Millisecond {
		t.Fatal("a deadline taken before the jumps expired early")
	}
}

func TestShiftWallWithoutMonotonic(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	if got := ShiftWall(t0, time.Minute); !got.Equal(t0.Add(time.Minute)) {
		t.Fatalf("ShiftWall of a wall-only time = %v, want %v", got, t0.Add(time.Minute))
	}
}
