package coordinator

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/testutil/coretest"
)

// TestRandomAgainstModel drives the coordinator and the naive model with the
// same seeded random interleavings of events and requires identical actions,
// deadlines and stats at every step, plus protocol invariants checked on the
// coordinator's actions alone. A failure names the seed and step; rerun one
// seed with -seed.
func TestRandomAgainstModel(t *testing.T) {
	const steps = 2000
	seen := coretest.Outcomes{}
	n := coretest.Seeds{First: 1, N: 150}.Run(t, func(seed uint64) { runRandom(t, seed, steps, seen) })
	t.Logf("outcomes: %v", seen)
	// The generator must keep reaching every outcome, or the agreement
	// above proves little.
	seen.Require(t, n, 10, "trigger", "persist", "notify-complete", "failover:", "rejected:",
		"subsumed", "expired", "declined", "persist metadata:", "after job failover", "job failover", "kind=final",
		"checkpointing suspended", "final at resume", "probe-storage", "storage-alert", "storage-recovered",
		"fail-job:", "cause=storage", "storage-failure-timeout", "transaction timeout")
	// Needs three storage failures in a row inside one alert window.
	seen.Require(t, n, 3, "alert aggregated")
}

// randomConfig picks options where the interesting interactions are likely:
// timeouts close to the interval, pauses, several concurrent checkpoints.
func randomConfig(r *rand.Rand) Config {
	pick := func(ds ...time.Duration) time.Duration { return ds[r.IntN(len(ds))] }
	return Config{
		Interval:          pick(0, 50*time.Millisecond, 100*time.Millisecond, 100*time.Millisecond),
		Timeout:           pick(0, 150*time.Millisecond, 300*time.Millisecond, time.Second),
		MinPause:          pick(0, 0, 30*time.Millisecond, 120*time.Millisecond),
		MaxConcurrent:     r.IntN(4),
		TolerableFailures: r.IntN(4),
		// Storage failures: bounds that fire within a run, or none.
		StorageFailureTimeout: pick(0, 0, 400*time.Millisecond, 2*time.Second),
		StorageMaxBackoff:     pick(0, 200*time.Millisecond, 500*time.Millisecond),
		AlertEvery:            pick(0, 60*time.Millisecond, 100*time.Millisecond, 150*time.Millisecond),
		TransactionTimeout:    pick(0, 0, 700*time.Millisecond),
	}
}

func runRandom(t *testing.T, seed uint64, steps int, seen map[string]int) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	cfg := randomConfig(r)
	tasks := make([]checkpoint.TaskID, 1+r.IntN(4))
	for i := range tasks {
		tasks[i] = checkpoint.TaskID{Vertex: i / 2, Subtask: i % 2}
	}
	firstID := checkpoint.ID(1 + r.IntN(50))
	now := epoch
	c := New(cfg, tasks, tasks[:1], firstID, now)
	m := newModel(cfg, tasks, firstID, now)
	inv := newInvariants(firstID)

	for step := range steps {
		ev := randomEvent(r, &now, c, inv, tasks)
		got := c.Step(ev)
		lines := make([]string, len(got))
		for i, a := range got {
			lines[i] = formatAction(a)
			tally(seen, lines[i])
			if _, ok := ev.(Resume); ok && strings.HasPrefix(lines[i], "trigger") && strings.Contains(lines[i], "kind=final") {
				seen["final at resume"]++
			}
		}
		want := m.step(ev)
		where := func() string { return fmt.Sprintf("seed %d step %d cfg %+v event %#v", seed, step, cfg, ev) }
		if !slices.Equal(lines, want) {
			t.Fatalf("%s:\ncoordinator:\n%s\nmodel:\n%s", where(), formatActions(got), formatLines(want))
		}
		if err := inv.check(ev, got); err != nil {
			t.Fatalf("%s: invariant: %v\nactions:\n%s", where(), err, formatActions(got))
		}
		gd, gok := c.NextDeadline()
		md, mok := m.deadline()
		if gok != mok || !gd.Equal(md) {
			t.Fatalf("%s: deadline: coordinator %s, model %s", where(), formatDeadline(gd, gok), formatDeadline(md, mok))
		}
		if gs, ms := c.Stats(), m.stats(); gs != ms {
			t.Fatalf("%s: stats:\ncoordinator %s\nmodel       %s", where(), formatStats(gs), formatStats(ms))
		}
	}
	if err := inv.finish(c); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
}

// tally counts which outcomes an action line shows.
func tally(seen map[string]int, line string) {
	seen[strings.SplitN(line, " ", 2)[0]]++
	for _, key := range []string{"subsumed", "expired", "declined", "persist metadata:", "after job failover", "job failover", "kind=final", "checkpointing suspended",
		"cause=storage", "storage-failure-timeout", "transaction timeout"} {
		if strings.Contains(line, key) {
			seen[key]++
		}
	}
	if strings.HasPrefix(line, "storage-alert") && !strings.Contains(line, " recent=1 ") {
		seen["alert aggregated"]++ // an alert that stood for several failures
	}
}

func formatLines(ls []string) string {
	if len(ls) == 0 {
		return "(no actions)"
	}
	return fmt.Sprint(ls)
}

// randomEvent picks the next event as a driver might see it: mostly acks for
// live checkpoints and ticks, some declines, persist results (sometimes
// failed), late and bogus messages, and rare trigger requests, ends of input
// and resets, suspensions and resumptions.
func randomEvent(r *rand.Rand, now *time.Time, c *Coordinator, inv *invariants, tasks []checkpoint.TaskID) Event {
	advance := func() time.Time {
		*now = now.Add(time.Duration(r.IntN(40)) * time.Millisecond)
		return *now
	}
	anyID := func() checkpoint.ID {
		if live := c.Pending(); len(live) > 0 && r.IntN(5) > 0 {
			return live[r.IntN(len(live))]
		}
		return inv.nextID - checkpoint.ID(r.IntN(6)) // late ids, sometimes one not triggered yet
	}
	anyTask := func() checkpoint.TaskID {
		if r.IntN(50) == 0 {
			return checkpoint.TaskID{Vertex: 99} // not a task of the job
		}
		return tasks[r.IntN(len(tasks))]
	}
	switch n := r.IntN(110); {
	case n >= 104:
		var err error
		if r.IntN(2) == 0 {
			err = errors.New("probe: disk full")
		}
		return StorageProbed{Err: err, Now: advance()}
	case n < 25:
		if d, ok := c.NextDeadline(); ok && r.IntN(2) == 0 && d.After(*now) {
			*now = d
			return Tick{Now: d}
		}
		return Tick{Now: advance()}
	case n < 65:
		task := anyTask()
		return Ack{Task: task, ID: anyID(), State: checkpoint.TaskState{Task: task}}
	case n < 69:
		cause := CauseDeclined
		if r.IntN(2) == 0 {
			cause = CauseStorage
		}
		return Decline{Task: anyTask(), ID: anyID(), Reason: "random", Cause: cause}
	case n < 90:
		id := anyID()
		if len(inv.awaiting) > 0 && r.IntN(4) > 0 {
			id = inv.awaiting[r.IntN(len(inv.awaiting))]
		}
		var err error
		if r.IntN(6) == 0 {
			err = errors.New("disk full")
		}
		return Persisted{ID: id, Err: err, Now: advance()}
	case n < 95:
		return TriggerRequest{Now: advance()}
	case n < 97:
		return EndOfInput{Now: advance()}
	case n < 99:
		return Reset{Reason: "random"}
	case n < 101:
		return Suspend{Reason: "region restarting"}
	default:
		return Resume{Now: advance()}
	}
}

// invariants checks the protocol on the coordinator's actions alone.
type invariants struct {
	suspended     bool                     // between Suspend and Resume
	nextID        checkpoint.ID            // every triggered id is below it
	triggered     map[checkpoint.ID]bool   // triggered and not yet ended
	ended         map[checkpoint.ID]string // id -> "complete" or "abort"
	persisted     map[checkpoint.ID]bool   // Persist emitted
	awaiting      []checkpoint.ID          // Persist emitted, no Persisted fed yet
	lastCompleted checkpoint.ID
}

func newInvariants(first checkpoint.ID) *invariants {
	return &invariants{nextID: first, triggered: map[checkpoint.ID]bool{}, ended: map[checkpoint.ID]string{}, persisted: map[checkpoint.ID]bool{}}
}

func (v *invariants) check(ev Event, actions []Action) error {
	switch ev.(type) {
	case Suspend:
		v.suspended = true
	case Resume:
		v.suspended = false
	}
	if p, ok := ev.(Persisted); ok {
		v.awaiting = slices.DeleteFunc(v.awaiting, func(id checkpoint.ID) bool { return id == p.ID })
	}
	end := func(id checkpoint.ID, how string) error {
		if !v.triggered[id] {
			return fmt.Errorf("%s of checkpoint %d, which is not pending (ended: %q)", how, id, v.ended[id])
		}
		delete(v.triggered, id)
		v.ended[id] = how
		return nil
	}
	for _, a := range actions {
		switch a := a.(type) {
		case Trigger:
			if v.suspended {
				return fmt.Errorf("trigger of checkpoint %d while suspended", a.ID)
			}
			if a.ID != v.nextID {
				return fmt.Errorf("trigger of checkpoint %d, want %d: ids must increase by one", a.ID, v.nextID)
			}
			v.nextID++
			v.triggered[a.ID] = true
		case Persist:
			if !v.triggered[a.ID] || v.persisted[a.ID] {
				return fmt.Errorf("persist of checkpoint %d: not pending or persisted twice", a.ID)
			}
			v.persisted[a.ID] = true
			v.awaiting = append(v.awaiting, a.ID)
		case NotifyComplete:
			p, ok := ev.(Persisted)
			if !ok || p.ID != a.ID || p.Err != nil || !v.persisted[a.ID] {
				return fmt.Errorf("notify-complete of checkpoint %d without a successful Persisted of it", a.ID)
			}
			if a.ID <= v.lastCompleted {
				return fmt.Errorf("checkpoint %d completed after %d", a.ID, v.lastCompleted)
			}
			v.lastCompleted = a.ID
			if err := end(a.ID, "complete"); err != nil {
				return err
			}
		case Abort:
			if a.Subsumed && a.ID >= v.lastCompleted {
				return fmt.Errorf("checkpoint %d subsumed but newest completed is %d", a.ID, v.lastCompleted)
			}
			if p, ok := ev.(Persisted); v.persisted[a.ID] && (!ok || p.ID != a.ID) {
				return fmt.Errorf("abort of persisting checkpoint %d before its Persisted", a.ID)
			}
			if err := end(a.ID, "abort"); err != nil {
				return err
			}
		}
	}
	return nil
}

// finish checks that every triggered checkpoint ended exactly once or is
// still pending.
func (v *invariants) finish(c *Coordinator) error {
	var open []checkpoint.ID
	for id := range v.triggered {
		open = append(open, id)
	}
	slices.Sort(open)
	if !slices.Equal(open, c.Pending()) {
		return fmt.Errorf("checkpoints neither completed nor aborted %v, coordinator pending %v", open, c.Pending())
	}
	if s := c.Stats(); s.Triggered != s.Completed+s.Failed+s.Aborted+s.InProgress {
		return fmt.Errorf("stats do not add up: %s", formatStats(s))
	}
	return nil
}
