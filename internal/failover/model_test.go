package failover

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/restart"
)

// model is a deliberately naive reference for the Handler: regions and
// tasks are found by scanning lists, each task carries a flag "still
// waited for" instead of a pending set, region states are strings, and the
// actions come out directly in the golden text form. It shares no code
// with the handler but the event types; its restart strategy is a separate
// instance of the same kind.
type model struct {
	regions  [][]checkpoint.TaskID
	strategy restart.Strategy

	state   []string // running, canceling, waiting, restoring
	waitFor [][]bool // per region and task: canceling: not yet terminal; restoring: not yet running
	dueAt   []time.Time

	clock     time.Time
	suspended bool
	failed    bool
	restarts  int
	out       []string
}

func newModel(regions [][]checkpoint.TaskID, s restart.Strategy) *model {
	m := &model{regions: regions, strategy: s}
	for _, r := range regions {
		m.state = append(m.state, "running")
		m.waitFor = append(m.waitFor, make([]bool, len(r)))
		m.dueAt = append(m.dueAt, time.Time{})
	}
	return m
}

// find returns the region and position of t, or -1.
func (m *model) find(t checkpoint.TaskID) (int, int) {
	for r, ts := range m.regions {
		for i, x := range ts {
			if x == t {
				return r, i
			}
		}
	}
	return -1, -1
}

func (m *model) emit(format string, args ...any) { m.out = append(m.out, fmt.Sprintf(format, args...)) }

func (m *model) see(now time.Time) {
	if now.After(m.clock) {
		m.clock = now
	}
}

func (m *model) step(ev Event) []string {
	m.out = nil
	if m.failed {
		return nil
	}
	switch ev := ev.(type) {
	case TaskFailed:
		m.see(ev.Now)
		r, i := m.find(ev.Task)
		switch {
		case r < 0 || m.state[r] == "waiting":
		case m.state[r] == "canceling":
			m.waitFor[r][i] = false
			m.checkDue()
		case ev.Unrecoverable:
			m.failJob(fmt.Sprintf("task %d/%d failed: %v", ev.Task.Vertex, ev.Task.Subtask, ev.Err))
		default:
			m.failover([]int{r}, fmt.Sprintf("task %d/%d failed: %v", ev.Task.Vertex, ev.Task.Subtask, ev.Err), []checkpoint.TaskID{ev.Task})
		}
	case TaskManagerLost:
		m.see(ev.Now)
		var hit []int
		for _, t := range ev.Tasks {
			r, i := m.find(t)
			switch {
			case r < 0:
			case m.state[r] == "canceling":
				m.waitFor[r][i] = false
			case m.state[r] != "waiting" && !slices.Contains(hit, r):
				hit = append(hit, r)
			}
		}
		slices.Sort(hit)
		m.failover(hit, ev.Reason, ev.Tasks)
		if !m.failed {
			m.checkDue()
		}
	case GlobalFailure:
		m.see(ev.Now)
		var hit []int
		for r, s := range m.state {
			if s == "running" || s == "restoring" {
				hit = append(hit, r)
			}
		}
		m.failover(hit, "global failure: "+ev.Reason, nil)
	case TaskTerminal:
		if r, i := m.find(ev.Task); r >= 0 && m.state[r] == "canceling" {
			m.waitFor[r][i] = false
			m.checkDue()
		}
	case TaskRunning:
		r, i := m.find(ev.Task)
		if r < 0 || m.state[r] != "restoring" {
			break
		}
		m.waitFor[r][i] = false
		if !slices.Contains(m.waitFor[r], true) {
			m.state[r] = "running"
		}
		if m.suspended && !slices.ContainsFunc(m.state, func(s string) bool { return s != "running" }) {
			m.suspended = false
			m.emit("resume-checkpointing")
		}
	case Tick:
		m.see(ev.Now)
		m.checkDue()
	}
	return m.out
}

func (m *model) failover(hit []int, cause string, gone []checkpoint.TaskID) {
	if len(hit) == 0 {
		return
	}
	d := m.strategy.OnFailure(m.clock)
	if !d.Restart {
		m.failJob(d.Reason + ": " + cause)
		return
	}
	m.restarts++
	if !m.suspended {
		m.suspended = true
		var what string
		switch {
		case len(hit) == 1:
			what = fmt.Sprintf("region %d is restarting", hit[0])
		case len(hit) == len(m.regions):
			what = "every region is restarting"
		default:
			nums := make([]string, len(hit))
			for i, r := range hit {
				nums[i] = fmt.Sprint(r)
			}
			what = "regions " + strings.Join(nums, ", ") + " are restarting"
		}
		m.emit("suspend-checkpointing: %s: %s", what, cause)
	}
	var cancel []string
	for _, r := range hit {
		m.state[r] = "canceling"
		m.dueAt[r] = m.clock.Add(d.Delay)
		for i, t := range m.regions[r] {
			m.waitFor[r][i] = !slices.Contains(gone, t)
			if m.waitFor[r][i] {
				cancel = append(cancel, fmt.Sprintf("%d/%d", t.Vertex, t.Subtask))
			}
		}
	}
	if len(cancel) > 0 {
		m.emit("cancel %s", strings.Join(cancel, " "))
	}
	if d.Delay > 0 {
		m.emit("arm-timer +%v", m.clock.Add(d.Delay).Sub(t0))
	}
	m.checkDue()
}

func (m *model) checkDue() {
	var ready []int
	for r := range m.regions {
		if m.state[r] == "canceling" && !slices.Contains(m.waitFor[r], true) {
			m.state[r] = "waiting"
		}
		if m.state[r] == "waiting" && !m.clock.Before(m.dueAt[r]) {
			m.state[r] = "restoring"
			for i := range m.waitFor[r] {
				m.waitFor[r][i] = true
			}
			ready = append(ready, r)
		}
	}
	if len(ready) > 0 {
		m.emit("restart regions=%v", ready)
	}
}

func (m *model) failJob(cause string) {
	m.failed = true
	m.emit("fail-job: %s", cause)
}
