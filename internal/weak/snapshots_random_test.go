package weak

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/testutil/coretest"
)

// model is a deliberately naive account of every task's snapshots, kept
// from the actions Snapshots returns and checked against it after every
// step (raft's quorum/quick_test.go in spirit).
type model struct {
	up, eod, finalDone, finished map[checkpoint.TaskID]bool
	inflight                     map[checkpoint.TaskID]checkpoint.ID // 0: none
	acked, orphan                map[checkpoint.ID]bool
	kind                         map[checkpoint.ID]checkpoint.Kind
	owner                        map[checkpoint.ID]checkpoint.TaskID
	deadline                     map[checkpoint.ID]time.Time
	latest                       map[checkpoint.TaskID]checkpoint.ID
	lastID                       checkpoint.ID
}

// TestSnapshotsRandom drives Snapshots through seeded random interleavings
// of task starts, failures, ends of data, acks, declines, metadata write
// results, ticks and requests, and checks against the model that:
//
//   - at most one snapshot per task is in flight, and only a running task
//     that has not completed its final snapshot is triggered;
//   - ids increase across all tasks;
//   - a snapshot after end of data is final, no other is;
//   - a task's restore point (Latest) is its newest completed snapshot,
//     and Complete discards exactly the one before it;
//   - a failed snapshot (decline, failed write) of one task changes no
//     other task's state and aborts nothing else;
//   - an acknowledged snapshot is never aborted but by its write failing;
//   - a running task with a periodic interval always has a trigger or a
//     timeout scheduled (it is never forgotten).
//
// A failure names its seed; rerun it with -seed.
func TestSnapshotsRandom(t *testing.T) {
	var completed, failed, finals int
	seeds := coretest.Seeds{First: 1, N: 300, Short: 40}.Run(t, func(seed uint64) {
		c, f, fin := runSnapshotsRandom(t, seed, 500)
		completed, failed, finals = completed+c, failed+f, finals+fin
	})
	if t.Failed() || coretest.Single() {
		return
	}
	if completed < seeds || failed < seeds || finals < seeds/4 {
		t.Fatalf("random runs too tame: %d completed, %d failed, %d final", completed, failed, finals)
	}
}

func runSnapshotsRandom(t *testing.T, seed uint64, steps int) (completed, failed, finals int) {
	r := rand.New(rand.NewPCG(seed, 1))
	n := 1 + r.IntN(5)
	tasks := make([]checkpoint.TaskID, n)
	for i := range tasks {
		tasks[i] = checkpoint.TaskID{Vertex: i / 2, Subtask: i % 2}
	}
	interval := time.Duration(r.IntN(3)) * time.Second // 0 in a third of the runs
	timeout := time.Duration(500+r.IntN(3000)) * time.Millisecond
	now := epoch
	s := NewSnapshots(Config{Interval: interval, Timeout: timeout, FirstID: checkpoint.ID(1 + r.IntN(50))}, tasks)
	m := &model{
		up: map[checkpoint.TaskID]bool{}, eod: map[checkpoint.TaskID]bool{}, finalDone: map[checkpoint.TaskID]bool{},
		finished: map[checkpoint.TaskID]bool{}, inflight: map[checkpoint.TaskID]checkpoint.ID{}, acked: map[checkpoint.ID]bool{}, orphan: map[checkpoint.ID]bool{},
		kind: map[checkpoint.ID]checkpoint.Kind{}, owner: map[checkpoint.ID]checkpoint.TaskID{},
		deadline: map[checkpoint.ID]time.Time{}, latest: map[checkpoint.TaskID]checkpoint.ID{},
	}
	fail := func(step int, ev Event, format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d step %d (%T %+v): %s", seed, step, ev, ev, fmt.Sprintf(format, args...))
	}
	pick := func(ok func(checkpoint.TaskID) bool) (checkpoint.TaskID, bool) {
		var c []checkpoint.TaskID
		for _, x := range tasks {
			if ok(x) {
				c = append(c, x)
			}
		}
		if len(c) == 0 {
			return checkpoint.TaskID{}, false
		}
		return c[r.IntN(len(c))], true
	}
	for step := range steps {
		var ev Event
		// mayAbort is the task whose snapshot this event may fail; a
		// failure of one task's snapshot must leave the others alone.
		var mayAbort *checkpoint.TaskID
		for ev == nil {
			switch r.IntN(10) {
			case 0:
				if x, ok := pick(func(x checkpoint.TaskID) bool { return !m.up[x] && !m.finished[x] }); ok {
					ev = Running{Task: x, Now: now}
				}
			case 1:
				if x, ok := pick(func(x checkpoint.TaskID) bool { return m.up[x] }); ok && r.IntN(3) == 0 {
					if m.finalDone[x] && r.IntN(2) == 0 {
						ev = Finished{Task: x}
					} else {
						ev = Down{Task: x, Reason: "random", Now: now}
					}
					mayAbort = &x
				}
			case 2:
				if x, ok := pick(func(x checkpoint.TaskID) bool { return !m.finished[x] }); ok && r.IntN(3) == 0 {
					ev = EndOfData{Task: x, Now: now}
				}
			case 3, 4:
				if x, ok := pick(func(x checkpoint.TaskID) bool { return m.inflight[x] != 0 }); ok {
					id := m.inflight[x]
					if r.IntN(8) == 0 {
						id = checkpoint.ID(r.IntN(int(m.lastID) + 2)) // stale or unknown
					}
					if r.IntN(6) == 0 {
						ev = Decline{Task: x, ID: id, Reason: "random", Now: now}
						mayAbort = &x
					} else {
						ev = Ack{Task: x, ID: id, State: checkpoint.TaskState{Task: x}, Now: now}
					}
				}
			case 5, 6:
				if x, ok := pick(func(x checkpoint.TaskID) bool { return m.inflight[x] != 0 && m.acked[m.inflight[x]] }); ok {
					var err error
					if r.IntN(5) == 0 {
						err = errors.New("disk full")
					}
					ev = Persisted{ID: m.inflight[x], Err: err, Now: now}
					mayAbort = &x
				}
			case 7, 8:
				now = now.Add(time.Duration(r.IntN(1500)) * time.Millisecond)
				ev = Tick{Now: now}
			case 9:
				if r.IntN(4) == 0 {
					ev = Request{Now: now}
				}
			}
		}
		type view struct {
			latest, inflight checkpoint.ID
			acked            bool
		}
		before := map[checkpoint.TaskID]view{}
		for _, x := range tasks {
			id, acked, _ := s.InFlight(x)
			before[x] = view{s.Latest(x), id, acked}
		}
		// The model's side of the event.
		switch ev := ev.(type) {
		case Running:
			m.up[ev.Task] = true
		case Down:
			m.up[ev.Task], m.eod[ev.Task], m.finalDone[ev.Task] = false, false, false
			m.orphan[m.inflight[ev.Task]] = true
		case Finished:
			m.up[ev.Task], m.eod[ev.Task], m.finalDone[ev.Task], m.finished[ev.Task] = false, false, false, true
			m.orphan[m.inflight[ev.Task]] = true
		case EndOfData:
			m.eod[ev.Task] = true
		}
		acts := s.Step(ev)
		for _, a := range acts {
			switch a := a.(type) {
			case Trigger:
				if !m.up[a.Task] || m.finalDone[a.Task] {
					fail(step, ev, "trigger of %v, which is not running or finished its final snapshot", a.Task)
				}
				if m.inflight[a.Task] != 0 {
					fail(step, ev, "trigger %d of %v while %d is in flight", a.ID, a.Task, m.inflight[a.Task])
				}
				if a.ID <= m.lastID {
					fail(step, ev, "id %d after %d", a.ID, m.lastID)
				}
				if (a.Kind == checkpoint.Final) != m.eod[a.Task] {
					fail(step, ev, "snapshot %d of %v is %s with end of data %t", a.ID, a.Task, a.Kind, m.eod[a.Task])
				}
				m.lastID = a.ID
				m.inflight[a.Task] = a.ID
				m.owner[a.ID], m.kind[a.ID], m.deadline[a.ID] = a.Task, a.Kind, now.Add(timeout)
			case Persist:
				ack, ok := ev.(Ack)
				if !ok || ack.Task != a.Task || ack.ID != a.ID || m.inflight[a.Task] != a.ID || m.acked[a.ID] {
					fail(step, ev, "persist %d of %v without its first ack", a.ID, a.Task)
				}
				if a.State.Task != a.Task {
					fail(step, ev, "persist %d of %v with the state of %v", a.ID, a.Task, a.State.Task)
				}
				m.acked[a.ID] = true
			case Complete:
				p, ok := ev.(Persisted)
				if !ok || p.Err != nil || p.ID != a.ID || m.inflight[a.Task] != a.ID || !m.acked[a.ID] {
					fail(step, ev, "complete %d of %v without its write", a.ID, a.Task)
				}
				if a.Discard != m.latest[a.Task] {
					fail(step, ev, "complete %d of %v discards %d, its previous is %d", a.ID, a.Task, a.Discard, m.latest[a.Task])
				}
				m.latest[a.Task] = a.ID
				m.inflight[a.Task] = 0
				if a.Kind == checkpoint.Final && m.up[a.Task] && !m.orphan[a.ID] {
					m.finalDone[a.Task] = true
					finals++
				}
				completed++
			case Abort:
				if m.inflight[a.Task] != a.ID {
					fail(step, ev, "abort %d of %v, not in flight", a.ID, a.Task)
				}
				if mayAbort != nil && *mayAbort != a.Task {
					fail(step, ev, "a failure of %v's snapshot aborted %v's", *mayAbort, a.Task)
				}
				switch ev := ev.(type) {
				case Persisted:
					if ev.Err == nil || ev.ID != a.ID {
						fail(step, ev, "abort %d after a successful write", a.ID)
					}
				case Tick:
					if m.acked[a.ID] || now.Before(m.deadline[a.ID]) {
						fail(step, ev, "snapshot %d timed out early or after its ack", a.ID)
					}
				case Running, EndOfData, Ack, Request:
					fail(step, ev, "abort %d", a.ID)
				default:
					if m.acked[a.ID] {
						fail(step, ev, "acknowledged snapshot %d aborted before its write ended", a.ID)
					}
				}
				m.inflight[a.Task] = 0
				failed++
			}
		}
		for _, x := range tasks {
			id, acked, ok := s.InFlight(x)
			if s.Latest(x) != m.latest[x] {
				fail(step, ev, "%v restores %d, its newest completed snapshot is %d", x, s.Latest(x), m.latest[x])
			}
			if id != m.inflight[x] || ok != (m.inflight[x] != 0) || acked != m.acked[m.inflight[x]] && ok {
				fail(step, ev, "%v in flight %d (acked %t), model %d", x, id, acked, m.inflight[x])
			}
			if mayAbort != nil && x != *mayAbort {
				if v := (view{s.Latest(x), id, acked}); v != before[x] {
					fail(step, ev, "%v's state changed by another task's event: %+v -> %+v", x, before[x], v)
				}
			}
			if interval > 0 && m.up[x] && !m.finalDone[x] && !m.acked[m.inflight[x]] {
				if at, ok := s.NextDeadline(); !ok || at.After(now.Add(max(interval, timeout))) {
					fail(step, ev, "%v runs but nothing is scheduled within %s (next: %v %t)", x, max(interval, timeout), at.Sub(now), ok)
				}
			}
		}
		c, f := s.Counts()
		if c != completed || f != failed {
			fail(step, ev, "counts %d/%d, model %d/%d", c, f, completed, failed)
		}
	}
	return completed, failed, finals
}
