package runtime

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/jobmaster"
	"github.com/weirstream/weir/internal/restart"
)

// fakeSlots places logical slots round-robin over its TaskManagers while
// free lasts; a slot a job holds keeps its place, as in the pool.
type fakeSlots struct {
	tms  []*fakeTM
	free int
	held map[int]*fakeTM
}

func (s *fakeSlots) Allocate(logical []int) (map[int]deployment.Placement, string) {
	need := 0
	for _, l := range logical {
		if s.held[l] == nil {
			need++
		}
	}
	if need > s.free {
		return nil, fmt.Sprintf("job j needs %d slots, %d free", need, s.free)
	}
	out := map[int]deployment.Placement{}
	for _, l := range logical {
		if s.held[l] == nil {
			s.held[l] = s.tms[l%len(s.tms)]
			s.free--
		}
		out[l] = deployment.Placement{TM: s.held[l], DataAddress: "addr-" + string(s.held[l].ID())}
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
	jg := twoStageGraph(t)
	store, err := storage.Open(t.TempDir(), "j")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	cfg := JobConfig{JobName: "j", CheckpointDir: "unused", NumRetained: 1, Restart: restart.NewFixedDelay(5, 0), Now: func() time.Time { return now }}
	if err := cfg.fill(); err != nil {
		t.Fatal(err)
	}
	jm := newJobMaster(cfg, jg, store)
	jm.start(nil, 1)
	jm.place = &slotPlacement{slots: slots}
	jm.slotTimeout = time.Minute
	startTestJobMaster(t, jm) // deploys: no TaskManager to prepare first
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
	wantCalls(t, a)
	wantCalls(t, b)
	if !strings.Contains(jm.cfg.Status.LastFailure(), "job j needs 2 slots, 0 free: waiting up to 1m0s (slot.request.timeout)") {
		t.Fatalf("not waiting, or no message: %q", jm.cfg.Status.LastFailure())
	}
	slots.free = 2
	step(jm, jobmaster.SlotsOffered{})
	wantCalls(t, a, "prepare j", "deploy 0/0#0 1/0#0")
	wantCalls(t, b, "prepare j", "deploy 0/1#0 1/1#0")
	step(jm, execState(0, 0, 0, deployment.ExecRunning), execState(0, 1, 0, deployment.ExecRunning), execState(1, 0, 0, deployment.ExecRunning), execState(1, 1, 0, deployment.ExecRunning))

	// tm-b is lost: its executions failed; the region's others are
	// cancelled, then redeployed where slots are (one free slot left
	// after the loss, here on tm-a).
	slots.lose(b)
	slots.free = 1
	jm.receive(jmEvent{lost: b, reason: "stream closed"})
	wantCalls(t, a, "cancel [0/0#0 1/0#0]")
	wantCalls(t, b)
	if got := jm.cfg.Status.LastFailure(); got != "TaskManager tm-b lost: stream closed" {
		t.Fatalf("failure %q", got)
	}
	// A late loss report of the same session changes nothing.
	jm.receive(jmEvent{lost: b, reason: "again"})
	wantCalls(t, a)
	step(jm, execState(0, 0, 0, deployment.ExecCanceled), execState(1, 0, 0, deployment.ExecCanceled))
	*now = now.Add(time.Second)
	step(jm, jobmaster.Tick{}) // the restart is due with no delay
	settle(jm)
	wantCalls(t, a, "deploy 0/0#1 0/1#1 1/0#1 1/1#1")
	// Reports from the lost session's executions are dropped.
	step(jm, execState(0, 1, 0, deployment.ExecFailed))
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
	*now = now.Add(30 * time.Second)
	step(jm, jobmaster.Tick{})
	if jm.m.Ended() {
		t.Fatalf("failed after 30s of a 1m timeout: %v", jm.result)
	}
	*now = now.Add(30 * time.Second)
	step(jm, jobmaster.Tick{})
	if !jm.m.Ended() || !IsUnrecoverable(jm.result) {
		t.Fatalf("result = %v, want an unrecoverable failure", jm.result)
	}
	want := "job j needs 2 slots, 0 free after waiting 1m0s (slot.request.timeout): start TaskManagers or give them more --slots"
	if !strings.Contains(jm.result.Error(), want) {
		t.Fatalf("result = %v\nwant %s", jm.result, want)
	}
}

// TestJobMasterSlotsFreedBeforeTimeout: slots that became free without a
// SlotsChanged (another job released them) are taken when the wait
// times out, instead of failing a job that could run.
func TestJobMasterSlotsFreedBeforeTimeout(t *testing.T) {
	a := &fakeTM{id: "tm-a"}
	slots := &fakeSlots{tms: []*fakeTM{a}, held: map[int]*fakeTM{}}
	jm, now := newClusterTestJobMaster(t, slots)
	wantCalls(t, a)
	slots.free = 2
	*now = now.Add(time.Minute)
	step(jm, jobmaster.Tick{})
	if jm.m.Ended() {
		t.Fatalf("failed with free slots: %v", jm.result)
	}
	wantCalls(t, a, "prepare j", "deploy 0/0#0 0/1#0 1/0#0 1/1#0")
}
