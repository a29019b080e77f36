package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestScheduler(t *testing.T) {
	c := New()
	s, err := c.Scheduler()
	if err != nil || s.Reactive || s.WaitTimeout != 30*time.Second || s.Stabilization != 10*time.Second || s.MinIncrease != 1 {
		t.Fatalf("defaults: %+v, %v", s, err)
	}
	for _, v := range []string{"reactive", "REACTIVE"} {
		if err := c.Set(SchedulerMode, v); err != nil {
			t.Fatalf("set %s: %v", v, err)
		}
		if s, err := c.Scheduler(); err != nil || !s.Reactive {
			t.Fatalf("%s: %+v, %v", v, s, err)
		}
	}
	if err := c.Set(SchedulerMode, "adaptive"); err == nil || !strings.Contains(err.Error(), "reactive") {
		t.Fatalf("scheduler-mode adaptive: %v", err)
	}
	// The wait for lost slots must end before slot.request.timeout.
	if err := c.Set(AdaptiveResourceWaitTimeout, "5 min"); err != nil {
		t.Fatal(err)
	}
	_, err = c.Scheduler()
	if !errors.Is(err, ErrBadValue) || !strings.Contains(err.Error(), "must be below slot.request.timeout 5 min") {
		t.Fatalf("wait timeout = slot request timeout: %v", err)
	}
	if err := c.Set(AdaptiveMinParallelismIncrease, "0"); err == nil {
		t.Fatal("min-parallelism-increase 0 accepted")
	}
}
