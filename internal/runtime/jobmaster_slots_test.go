package runtime

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeSlots places logical slots round-robin over its TaskManagers while
// free lasts; a slot a job holds keeps its place, as in the pool.
type fakeSlots struct {
	tms  []*fakeTM
	free int
	held map[int]*fakeTM
}

func (s *fakeSlots) Allocate(logical []int) (map[int]Placement, string) {
	need := 0
	for _, l := range logical {
		if s.held[l] == nil {
			need++
		}
	}
	if need > s.free {
		return nil, fmt.Sprintf("job j needs %d slots, %d free", need, s.free)
	}
	out := map[int]Placement{}
	for _, l := range logical {
		if s.held[l] == nil {
			s.held[l] = s.tms[l%len(s.tms)]
			s.free--
		}
		out[l] = Placement{TM: s.held[l], DataAddress: "addr-" + string(s.held[l].ID())}
	}
	return out, ""
}

func (s *fakeSlots) Release() {}

// lose drops a TaskManager and the slots held there.
func (s *fakeSlots) lose(tm *fakeTM) {
	s.tms = slices.DeleteFunc(s.tms, func(f *fakeTM) bool { return f == tm })
	for l, f := range s.held {
		if f == tm {
			delete(s.held, l)
		}
	}
}

func newClusterTestJobMaster(t *testing.T, slots *fakeSlots) (*JobMaster, *time.Time) {
	t.Helper()
	jm, _ := newTestJobMaster(t)
	now := time.Unix(1000, 0)
	jm.cfg.Now = func() time.Time { return now }
	jm.tms, jm.place = nil, nil
	jm.slots, jm.slotTimeout = slots, time.Minute
	jm.preparedOn = map[TaskManagerGateway]bool{}
	jm.desc = "desc"
	return jm, &now
}

// TestJobMasterWaitsForSlots: a job deployed while too few slots are free
// waits without deploying or checkpointing, says so, and deploys once
// slots come, preparing each TaskManager first; a lost TaskManager fails
// the executions there and their region is redeployed on the slots left.
func TestJobMasterWaitsForSlots(t *testing.T) {
	a, b := &fakeTM{id: "tm-a"}, &fakeTM{id: "tm-b"}
	slots := &fakeSlots{tms: []*fakeTM{a, b}, held: map[int]*fakeTM{}}
	jm, now := newClusterTestJobMaster(t, slots)
	jm.prepared(nil, nil)
	wantCalls(t, a)
	wantCalls(t, b)
	if jm.waiting == nil || !strings.Contains(jm.cfg.Status.LastFailure(), "job j needs 2 slots, 0 free: waiting up to 1m0s (slot.request.timeout)") {
		t.Fatalf("not waiting, or no message: %q", jm.cfg.Status.LastFailure())
	}
	slots.free = 2
	step(jm, jmEvent{kind: evSlots})
	wantCalls(t, a, "prepare j", "deploy 0/0#0 1/0#0")
	wantCalls(t, b, "prepare j", "deploy 0/1#0 1/1#0")
	step(jm, execState(0, 0, 0, ExecRunning), execState(0, 1, 0, ExecRunning), execState(1, 0, 0, ExecRunning), execState(1, 1, 0, ExecRunning))

	// tm-b is lost: its executions failed; the region's others are
	// cancelled, then redeployed where slots are (one free slot left
	// after the loss, here on tm-a).
	slots.lose(b)
	slots.free = 1
	step(jm, jmEvent{kind: evTaskManagerLost, gw: b, reason: "stream closed"})
	wantCalls(t, a, "cancel [0/0#0 1/0#0]")
	wantCalls(t, b)
	if got := jm.cfg.Status.LastFailure(); got != "TaskManager tm-b lost: stream closed" {
		t.Fatalf("failure %q", got)
	}
	// A late loss report of the same session changes nothing.
	step(jm, jmEvent{kind: evTaskManagerLost, gw: b, reason: "again"})
	wantCalls(t, a)
	step(jm, execState(0, 0, 0, ExecCanceled), execState(1, 0, 0, ExecCanceled))
	*now = now.Add(time.Second)
	step(jm) // the restart is due with no delay
	wantCalls(t, a, "deploy 0/0#1 0/1#1 1/0#1 1/1#1")
	// Reports from the lost session's executions are dropped.
	step(jm, execState(0, 1, 0, ExecFailed))
	wantCalls(t, a)
	if got := jm.cfg.Status.Restarts.Load(); got != 1 {
		t.Fatalf("%d restarts, want 1", got)
	}
}

// TestJobMasterSlotTimeout: a job whose slots never come fails after
// slot.request.timeout as unrecoverable, naming the shortage and the fix.
func TestJobMasterSlotTimeout(t *testing.T) {
	slots := &fakeSlots{tms: []*fakeTM{{id: "tm-a"}}, held: map[int]*fakeTM{}}
	jm, now := newClusterTestJobMaster(t, slots)
	jm.prepared(nil, nil)
	*now = now.Add(30 * time.Second)
	jm.slotTick(*now)
	if jm.fatal != nil {
		t.Fatalf("failed after 30s of a 1m timeout: %v", jm.fatal)
	}
	*now = now.Add(30 * time.Second)
	jm.slotTick(*now)
	if jm.fatal == nil || !IsUnrecoverable(jm.fatal) {
		t.Fatalf("fatal = %v, want an unrecoverable failure", jm.fatal)
	}
	want := "job j needs 2 slots, 0 free after waiting 1m0s (slot.request.timeout): start TaskManagers or give them more --slots"
	if !strings.Contains(jm.fatal.Error(), want) {
		t.Fatalf("fatal = %v\nwant %s", jm.fatal, want)
	}
}

// TestJobMasterSlotsFreedBeforeTimeout: slots that became free without a
// SlotsChanged (another job released them) are taken when the wait
// times out, instead of failing a job that could run.
func TestJobMasterSlotsFreedBeforeTimeout(t *testing.T) {
	a := &fakeTM{id: "tm-a"}
	slots := &fakeSlots{tms: []*fakeTM{a}, held: map[int]*fakeTM{}}
	jm, now := newClusterTestJobMaster(t, slots)
	jm.prepared(nil, nil)
	wantCalls(t, a)
	slots.free = 2
	*now = now.Add(time.Minute)
	jm.slotTick(*now)
	if jm.fatal != nil {
		t.Fatalf("failed with free slots: %v", jm.fatal)
	}
	wantCalls(t, a, "prepare j", "deploy 0/0#0 0/1#0 1/0#0 1/1#0")
}
