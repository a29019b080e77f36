package window

import (
	"math"
	"testing"
)

func TestWindow(t *testing.T) {
	for _, c := range []struct {
		a, b       Window
		intersects bool
		cover      Window
	}{
		{Window{0, 10}, Window{10, 20}, true, Window{0, 20}}, // touching
		{Window{10, 20}, Window{0, 10}, true, Window{0, 20}},
		{Window{0, 10}, Window{11, 20}, false, Window{0, 20}}, // 1 ms apart
		{Window{11, 20}, Window{0, 10}, false, Window{0, 20}},
		{Window{0, 10}, Window{3, 5}, true, Window{0, 10}}, // inside
		{Window{3, 5}, Window{0, 10}, true, Window{0, 10}},
		{Window{-5, 2}, Window{1, 3}, true, Window{-5, 3}},
	} {
		if got := c.a.Intersects(c.b); got != c.intersects {
			t.Errorf("%v.Intersects(%v) = %t", c.a, c.b, got)
		}
		if got := c.a.Cover(c.b); got != c.cover {
			t.Errorf("%v.Cover(%v) = %v, want %v", c.a, c.b, got, c.cover)
		}
	}
	if got := (Window{0, 10}).MaxTimestamp(); got != 9 {
		t.Errorf("MaxTimestamp of [0,10) = %d", got)
	}
	if got := GlobalWindow().MaxTimestamp(); got != math.MaxInt64 {
		t.Errorf("MaxTimestamp of the global window = %d", got)
	}
	if got := CleanupTime(Window{0, 10}, math.MaxInt64); got != math.MaxInt64 {
		t.Errorf("CleanupTime saturates: got %d", got)
	}
	if IsLate(GlobalWindow(), math.MaxInt64-1, 5) || !IsLate(GlobalWindow(), math.MaxInt64, 5) {
		t.Errorf("the global window is late only at the end of time")
	}
}

// TestNoAllocs: the per-record calls do not allocate once buffers grew.
func TestNoAllocs(t *testing.T) {
	sl, _ := NewSliding(EventTime, 10, 3, 1)
	se, _ := NewSession(EventTime, 5)
	r, _ := NewRules(sl, Trigger{}, 5)
	buf := make([]Window, 0, 8)
	var set MergingSet
	for i := range 10 {
		set.Add(Window{int64(i) * 20, int64(i)*20 + 5})
	}
	enc := set.AppendTo(nil)
	out := make([]byte, 0, 256)
	allocs := testing.AllocsPerRun(100, func() {
		ts := int64(1234)
		buf, _ = sl.AppendWindows(buf[:0], ts)
		buf, _ = se.AppendWindows(buf[:0], ts)
		for _, w := range buf {
			d := r.OnElement(w, 0, 1000)
			_ = d.Register.T[:d.Register.N]
			_ = r.OnTimer(w, Timer{EventTime, w.MaxTimestamp()}, 0)
		}
		if err := set.Decode(enc); err != nil {
			t.Fatal(err)
		}
		set.Add(Window{42, 47}) // merges with [40,45)
		set.Add(Window{300, 305})
		out = set.AppendTo(out[:0])
	})
	if allocs != 0 {
		t.Errorf("%v allocations per record", allocs)
	}
}
