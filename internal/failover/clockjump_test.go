package failover

import (
	"errors"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/restart"
	"github.com/weirstream/weir/internal/testutil/clocktest"
)

// TestRestartDelayWallClockJump (fault class 14): the restart delay runs on
// the monotonic clock. Fed time.Now's values (the JobMaster's clock), a
// region waiting out its delay is not restarted early by a step of the wall
// clock forward, nor held back an hour by a step back. Time passing is Add
// on the clock's values, which moves both readings, as real time does.
func TestRestartDelayWallClockJump(t *testing.T) {
	const delay = 5 * time.Second
	task := checkpoint.TaskID{}
	for _, jump := range []time.Duration{time.Hour, -time.Hour} {
		t.Run(jump.String(), func(t *testing.T) {
			clk := clocktest.New()
			h := NewHandler([][]checkpoint.TaskID{{task}}, restart.NewFixedDelay(3, delay))
			acts := h.Step(TaskFailed{Task: task, Err: errors.New("boom"), Now: clk.Now()})
			if !hasArm(acts) {
				acts = append(acts, h.Step(TaskTerminal{Task: task})...)
			}
			if !hasArm(acts) {
				t.Fatalf("no restart timer armed: %v", acts)
			}
			clk.Jump(jump)
			now := clk.Now()
			if hasRestart(h.Step(Tick{Now: now})) {
				t.Fatalf("a %s step of the wall clock restarted the region before its delay", jump)
			}
			if hasRestart(h.Step(Tick{Now: now.Add(delay - 10*time.Millisecond)})) {
				t.Fatal("restarted before the delay")
			}
			if !hasRestart(h.Step(Tick{Now: now.Add(delay)})) {
				t.Fatalf("not restarted once the delay passed after a %s step", jump)
			}
		})
	}
}

// TestFailureRateWallClockJump: failure-rate counts failures within its
// interval on the monotonic clock; a step forward between two failures
// does not push the first out of the window.
func TestFailureRateWallClockJump(t *testing.T) {
	clk := clocktest.New()
	s := restart.NewFailureRate(1, time.Minute, 0)
	if d := s.OnFailure(clk.Now()); !d.Restart {
		t.Fatalf("first failure: %+v", d)
	}
	clk.Jump(time.Hour)
	if d := s.OnFailure(clk.Now()); d.Restart {
		t.Fatalf("a second failure right after a +1h step was allowed: %+v", d)
	}
}

func hasArm(acts []Action) bool {
	for _, a := range acts {
		if _, ok := a.(ArmTimer); ok {
			return true
		}
	}
	return false
}

func hasRestart(acts []Action) bool {
	for _, a := range acts {
		if _, ok := a.(Restart); ok {
			return true
		}
	}
	return false
}
