package failover

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/restart"
	"github.com/weirstream/weir/internal/testutil/coretest"
)

// TestRandomAgainstModel drives the handler and the naive model with the
// same seeded random events, as a JobMaster would see them, and requires
// identical actions, region states and restart counts at every step, plus
// protocol invariants checked on the handler's actions alone. At the end
// the driver lets every cancellation and deployment finish: the job must
// run again with checkpointing resumed, or have failed. A failure names the
// seed and step; rerun it with -seed.
func TestRandomAgainstModel(t *testing.T) {
	const steps = 400
	seen := coretest.Outcomes{}
	n := coretest.Seeds{First: 1, N: 300}.Run(t, func(seed uint64) { runRandom(t, seed, steps, seen) })
	t.Logf("outcomes: %v", seen)
	// The generator must keep reaching every outcome, or the agreement
	// proves little.
	seen.Require(t, n, 10, "suspend-checkpointing", "cancel", "arm-timer", "restart", "resume-checkpointing",
		"fail-job", "are restarting", "every region", "global failure", "exhausted", "multi-restart")
}

// randomJob picks regions of one to four tasks spread over TaskManagers
// a..c, and a strategy with enough attempts that most runs keep going.
func randomJob(r *rand.Rand) (regions [][]checkpoint.TaskID, tm map[checkpoint.TaskID]string, mk func() restart.Strategy) {
	tm = map[checkpoint.TaskID]string{}
	vertex := 0
	for range 1 + r.IntN(4) {
		var region []checkpoint.TaskID
		width, depth := 1+r.IntN(2), 1+r.IntN(2)
		for v := range depth {
			for i := range width {
				t := checkpoint.TaskID{Vertex: vertex + v, Subtask: i}
				region = append(region, t)
				tm[t] = string(rune('a' + r.IntN(3)))
			}
		}
		vertex += depth
		regions = append(regions, region)
	}
	slices.SortFunc(regions, func(a, b []checkpoint.TaskID) int { return CompareTaskID(a[0], b[0]) })
	delay := []time.Duration{0, 0, 100 * time.Millisecond, time.Second}[r.IntN(4)]
	attempts := []int{3, 20, 1000}[r.IntN(3)]
	switch r.IntN(3) {
	case 0:
		mk = func() restart.Strategy { return restart.NewFailureRate(attempts/2+1, 2*time.Second, delay) }
	default:
		mk = func() restart.Strategy { return restart.NewFixedDelay(attempts, delay) }
	}
	return regions, tm, mk
}

// driver is the JobMaster's view of the tasks: it performs the handler's
// actions and reports only what a real driver could see.
type driver struct {
	r       *rand.Rand
	regions [][]checkpoint.TaskID
	tm      map[checkpoint.TaskID]string
	status  map[checkpoint.TaskID]string // running, canceling, terminal, deploying
	now     time.Time
	timers  []time.Time
}

func (d *driver) all() []checkpoint.TaskID { return slices.Concat(d.regions...) }

func (d *driver) with(status ...string) []checkpoint.TaskID {
	var out []checkpoint.TaskID
	for _, t := range d.all() {
		if slices.Contains(status, d.status[t]) {
			out = append(out, t)
		}
	}
	return out
}

func (d *driver) pick(ts []checkpoint.TaskID) (checkpoint.TaskID, bool) {
	if len(ts) == 0 {
		return checkpoint.TaskID{}, false
	}
	return ts[d.r.IntN(len(ts))], true
}

// randomEvent picks what a JobMaster might report next: tasks stopping and
// coming up, failures of live tasks (also while they are being cancelled
// or deployed), TaskManager losses, clock ticks (often exactly at an armed
// timer), rare global failures and unrecoverable errors, and duplicate
// reports the handler must ignore.
func (d *driver) randomEvent() Event {
	for {
		switch n := d.r.IntN(100); {
		case n < 25:
			if t, ok := d.pick(d.with("canceling")); ok {
				d.status[t] = "terminal"
				return TaskTerminal{Task: t}
			}
		case n < 45:
			if t, ok := d.pick(d.with("deploying")); ok {
				d.status[t] = "running"
				return TaskRunning{Task: t}
			}
		case n < 62:
			if t, ok := d.pick(d.with("running", "deploying", "canceling")); ok {
				d.status[t] = "terminal"
				return TaskFailed{Task: t, Err: errors.New("boom"), Unrecoverable: d.r.IntN(200) == 0, Now: d.now}
			}
		case n < 67:
			name := string(rune('a' + d.r.IntN(3)))
			var gone []checkpoint.TaskID
			for _, t := range d.all() {
				if d.tm[t] == name && d.status[t] != "terminal" {
					gone = append(gone, t)
					d.status[t] = "terminal"
				}
			}
			return TaskManagerLost{Tasks: gone, Reason: "tm " + name + " lost", Now: d.now}
		case n < 69:
			return GlobalFailure{Reason: "checkpoints failing", Now: d.now}
		case n < 72:
			// A duplicate: the handler must take it as nothing new.
			t, _ := d.pick(d.all())
			switch d.status[t] {
			case "terminal":
				return TaskTerminal{Task: t}
			case "running":
				return TaskRunning{Task: t}
			}
		default:
			if len(d.timers) > 0 && d.r.IntN(2) == 0 {
				at := slices.MinFunc(d.timers, func(a, b time.Time) int { return a.Compare(b) })
				d.timers = slices.DeleteFunc(d.timers, func(x time.Time) bool { return x.Equal(at) })
				if at.After(d.now) {
					d.now = at
				}
			} else {
				d.now = d.now.Add(time.Duration(d.r.IntN(300)) * time.Millisecond)
			}
			return Tick{Now: d.now}
		}
	}
}

// perform applies the handler's actions to the driver's view, checking the
// protocol on the way.
func (d *driver) perform(acts []Action, inv *handlerInvariants) error {
	for _, a := range acts {
		if inv.failed {
			return fmt.Errorf("action %s after fail-job", formatAction(a))
		}
		switch a := a.(type) {
		case Cancel:
			if len(a.Tasks) == 0 {
				return errors.New("empty cancel")
			}
			for _, t := range a.Tasks {
				if s := d.status[t]; s != "running" && s != "deploying" {
					return fmt.Errorf("cancel of task %d/%d, which is %s", t.Vertex, t.Subtask, s)
				}
				d.status[t] = "canceling"
			}
		case Restart:
			for _, r := range a.Regions {
				for _, t := range d.regions[r] {
					if d.status[t] != "terminal" {
						return fmt.Errorf("restart of region %d while task %d/%d is %s", r, t.Vertex, t.Subtask, d.status[t])
					}
					d.status[t] = "deploying"
				}
			}
		case SuspendCheckpointing:
			if inv.suspended {
				return errors.New("suspend while suspended")
			}
			inv.suspended = true
		case ResumeCheckpointing:
			if !inv.suspended {
				return errors.New("resume while not suspended")
			}
			if rest := d.with("canceling", "terminal", "deploying"); len(rest) > 0 {
				return fmt.Errorf("resume while tasks %s do not run", taskList(rest))
			}
			inv.suspended = false
		case ArmTimer:
			if a.At.Before(d.now) {
				return fmt.Errorf("timer armed in the past: %v < %v", a.At.Sub(t0), d.now.Sub(t0))
			}
			d.timers = append(d.timers, a.At)
		case FailJob:
			inv.failed = true
		}
	}
	return nil
}

type handlerInvariants struct{ suspended, failed bool }

func runRandom(t *testing.T, seed uint64, steps int, seen map[string]int) {
	r := rand.New(rand.NewPCG(seed, 0xfa11))
	regions, tm, mk := randomJob(r)
	h := NewHandler(regions, mk())
	m := newModel(regions, mk())
	d := &driver{r: r, regions: regions, tm: tm, status: map[checkpoint.TaskID]string{}, now: t0}
	for _, tt := range d.all() {
		d.status[tt] = "running"
	}
	inv := &handlerInvariants{}

	check := func(step int, ev Event) {
		t.Helper()
		got := h.Step(ev)
		lines := make([]string, len(got))
		for i, a := range got {
			lines[i] = formatAction(a)
			tallyFailover(seen, lines[i])
		}
		want := m.step(ev)
		where := fmt.Sprintf("seed %d step %d event %T%+v", seed, step, ev, ev)
		if !slices.Equal(lines, want) {
			t.Fatalf("%s:\nhandler:\n%s\nmodel:\n%s", where, strings.Join(lines, "\n"), strings.Join(want, "\n"))
		}
		if err := d.perform(got, inv); err != nil {
			t.Fatalf("%s: invariant: %v\nactions:\n%s", where, err, strings.Join(lines, "\n"))
		}
		for reg := range regions {
			if gs, ms := h.State(reg).String(), strings.ToUpper(m.state[reg]); !m.failed && gs != ms {
				t.Fatalf("%s: region %d handler %s, model %s", where, reg, gs, ms)
			}
		}
		if h.Restarts() != m.restarts || h.Failed() != m.failed {
			t.Fatalf("%s: handler restarts=%d failed=%v, model restarts=%d failed=%v", where, h.Restarts(), h.Failed(), m.restarts, m.failed)
		}
	}

	for step := range steps {
		if h.Failed() {
			break
		}
		check(step, d.randomEvent())
	}
	// Let everything settle: stop what is cancelled, wait out the delays,
	// bring up what is deployed. The job must run again or have failed.
	for step := steps; !h.Failed(); step++ {
		if ts := d.with("canceling"); len(ts) > 0 {
			d.status[ts[0]] = "terminal"
			check(step, TaskTerminal{Task: ts[0]})
		} else if ts := d.with("deploying"); len(ts) > 0 {
			d.status[ts[0]] = "running"
			check(step, TaskRunning{Task: ts[0]})
		} else if ts := d.with("terminal"); len(ts) > 0 {
			d.now = d.now.Add(time.Second)
			check(step, Tick{Now: d.now})
		} else {
			break
		}
		if step > steps+1000 {
			t.Fatalf("seed %d: no progress while settling: %v", seed, d.status)
		}
	}
	if !h.Failed() {
		if inv.suspended {
			t.Fatalf("seed %d: every task runs but checkpointing is still suspended", seed)
		}
		for reg := range regions {
			if h.State(reg) != Running {
				t.Fatalf("seed %d: region %d is %s after settling", seed, reg, h.State(reg))
			}
		}
	}
	if len(regions) > 1 && h.Restarts() > 1 {
		seen["multi-restart"]++
	}
}

// tallyFailover counts which outcomes an action line shows.
func tallyFailover(seen map[string]int, line string) {
	head, _, _ := strings.Cut(line, " ")
	seen[strings.TrimSuffix(head, ":")]++
	for _, key := range []string{"are restarting", "every region", "global failure", "exhausted"} {
		if strings.Contains(line, key) {
			seen[key]++
		}
	}
}
