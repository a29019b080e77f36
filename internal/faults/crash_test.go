package faults

import (
	"errors"
	"testing"
)

// TestCrashAtNthHit: the crash comes at exactly the nth Hit of its point,
// whatever other points are hit, and only once; a crash that returns
// fails that Hit like a planned failure.
func TestCrashAtNthHit(t *testing.T) {
	var crashed []Fired
	i, err := NewCrash(SnapshotAsync, 3, func(f Fired) { crashed = append(crashed, f) })
	if err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= 5; k++ {
		i.Progress(10)
		if err := i.Hit(Process); err != nil {
			t.Fatalf("Hit(process) = %v", err)
		}
		err := i.Hit(SnapshotAsync)
		if (k == 3) != (err != nil) || err != nil && !errors.Is(err, ErrInjected) {
			t.Fatalf("hit %d of snapshot-async: %v", k, err)
		}
	}
	if len(crashed) != 1 || crashed[0].Point != SnapshotAsync || i.Fired() != 1 {
		t.Fatalf("crashed %v (fired %d), want once at snapshot-async", crashed, i.Fired())
	}
}

func TestParseCrash(t *testing.T) {
	if p, n, err := ParseCrash("snapshot-async:3"); err != nil || p != SnapshotAsync || n != 3 {
		t.Errorf("ParseCrash(snapshot-async:3) = %q, %d, %v", p, n, err)
	}
	for _, bad := range []string{"", "snapshot-async", "snapshot-async:0", "nowhere:1", ":2", "commit:x"} {
		if _, _, err := ParseCrash(bad); err == nil {
			t.Errorf("ParseCrash(%q) took it", bad)
		}
	}
	if _, err := NewCrash("nowhere", 1, func(Fired) {}); err == nil {
		t.Error("NewCrash at an unknown point took it")
	}
}
