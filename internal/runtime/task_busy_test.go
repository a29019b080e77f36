package runtime

import (
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobstatus"
)

// TestBusyClock splits a scripted second of a task's time and checks the
// cumulative figures, a wait still going on, and the rates' windows.
func TestBusyClock(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var sent time.Duration
	var c busyClock
	c.senders = func() time.Duration { return sent }
	if got := c.times(at(5)); got != (jobstatus.TaskTime{}) {
		t.Fatalf("before the start: %+v, want zero", got)
	}
	c.start(t0)
	c.beginIdle(at(100))
	c.endIdle(at(600)) // idle 500
	c.beginWait(at(700))
	c.endWait(at(800)) // backpressured 100
	sent = 100 * time.Millisecond
	c.addIdle(50 * time.Millisecond)
	got := c.times(at(1000))
	want := jobstatus.TaskTime{Busy: 250 * time.Millisecond, Idle: 550 * time.Millisecond, BackPressured: 200 * time.Millisecond}
	if got != want {
		t.Fatalf("first second: %+v, want %+v (no rates before a window)", got, want)
	}
	// An idle wait going on since 1.5 s counts up to the sample.
	c.beginIdle(at(1500))
	got = c.times(at(2000))
	if got.Idle != 1050*time.Millisecond || got.IdleMsPerSecond != 500 || got.BusyMsPerSecond != 500 || got.BackPressuredMsPerSecond != 0 {
		t.Fatalf("second second: %+v, want idle 1.05 s and 500/500/0 ms per second", got)
	}
	// A reader within the window sees the same window's base (rates over
	// 1–2 s): the wait still going on makes the rest idle.
	got = c.times(at(2500))
	if got.IdleMsPerSecond != 666 || got.BusyMsPerSecond+got.IdleMsPerSecond+got.BackPressuredMsPerSecond != 1000 {
		t.Fatalf("at 2.5 s: %+v, want idle 666 ms per second over 1–2.5 s, rates summing to 1000", got)
	}
	c.endIdle(at(3000))
	got = c.times(at(3000))
	if got.IdleMsPerSecond != 1000 || got.BusyMsPerSecond != 0 {
		t.Fatalf("at 3 s: %+v, want idle 1000 ms per second over 2–3 s", got)
	}
	// Parts measured apart from the total never make busy negative.
	sent = time.Hour
	got = c.times(at(3100))
	if got.Busy < 0 || got.Busy+got.Idle+got.BackPressured != 3100*time.Millisecond || got.BusyMsPerSecond < 0 {
		t.Fatalf("with an overlapping send wait: %+v, want parts summing to 3.1 s, none negative", got)
	}
}
