package failover

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/restart"
)

// RegionState is where a region is in its failover cycle.
type RegionState uint8

const (
	// Running: the region's tasks run (or are being deployed at job start).
	Running RegionState = iota
	// Canceling: a task failed; waiting for the others to stop.
	Canceling
	// Waiting: every task stopped; waiting for the restart delay.
	Waiting
	// Restoring: redeployed; waiting for every task to report running.
	Restoring
)

func (s RegionState) String() string {
	return [...]string{"RUNNING", "CANCELING", "WAITING", "RESTORING"}[s]
}

// Handler decides, for one job, which regions to cancel and restart when
// tasks fail: a pure state machine fed with Step. It starts with every
// region Running. Events of superseded attempts must be dropped by the
// caller: a TaskFailed in a Restoring region is taken as a failure of the
// new attempt.
type Handler struct {
	regions   [][]checkpoint.TaskID
	index     map[checkpoint.TaskID]int
	strategy  restart.Strategy
	state     []RegionState
	pending   []map[checkpoint.TaskID]bool // Canceling: tasks not yet terminal; Restoring: not yet running
	restartAt []time.Time
	now       time.Time
	suspended bool
	failed    bool
	restarts  int
}

// NewHandler returns a handler over regions (as runtime.Regions returns
// them) that asks strategy at every region failover and global failure. It
// panics if a region is empty or a task is in two regions: that is a bug of
// the caller, and an empty region could never report running again.
func NewHandler(regions [][]checkpoint.TaskID, strategy restart.Strategy) *Handler {
	seen := map[checkpoint.TaskID]int{}
	for r, tasks := range regions {
		if len(tasks) == 0 {
			panic(fmt.Sprintf("failover: region %d has no tasks", r))
		}
		for _, t := range tasks {
			if prev, dup := seen[t]; dup {
				panic(fmt.Sprintf("failover: task %d/%d is in regions %d and %d", t.Vertex, t.Subtask, prev, r))
			}
			seen[t] = r
		}
	}
	return &Handler{
		regions:   regions,
		index:     RegionIndex(regions),
		strategy:  strategy,
		state:     make([]RegionState, len(regions)),
		pending:   make([]map[checkpoint.TaskID]bool, len(regions)),
		restartAt: make([]time.Time, len(regions)),
	}
}

// State returns region r's state.
func (h *Handler) State(r int) RegionState { return h.state[r] }

// Failed reports whether the handler failed the job.
func (h *Handler) Failed() bool { return h.failed }

// Restarts counts the failovers the restart strategy allowed (Flink's
// numRestarts): one per failure event, however many regions it hit.
func (h *Handler) Restarts() int { return h.restarts }

// Step applies one event and returns the actions it causes, in order.
func (h *Handler) Step(ev Event) []Action {
	if h.failed {
		return nil
	}
	var out []Action
	switch ev := ev.(type) {
	case TaskFailed:
		h.advance(ev.Now)
		r, ok := h.index[ev.Task]
		if !ok {
			return nil
		}
		switch h.state[r] {
		case Canceling:
			// A task may fail instead of stopping quietly when it is
			// cancelled (or fail for its own reasons meanwhile): the region
			// is failing already, but the task is terminal all the same.
			delete(h.pending[r], ev.Task)
			return h.due()
		case Waiting:
			return nil // every task already terminal: a duplicate report
		}
		cause := fmt.Errorf("task %d/%d failed: %w", ev.Task.Vertex, ev.Task.Subtask, ev.Err)
		if ev.Unrecoverable {
			return h.fail(cause)
		}
		out = h.failRegions([]int{r}, cause, map[checkpoint.TaskID]bool{ev.Task: true})
	case TaskManagerLost:
		h.advance(ev.Now)
		gone := map[checkpoint.TaskID]bool{}
		var hit []int
		for _, t := range ev.Tasks {
			r, ok := h.index[t]
			if !ok {
				continue
			}
			gone[t] = true
			if h.state[r] == Canceling {
				delete(h.pending[r], t)
			} else if h.state[r] != Waiting && !slices.Contains(hit, r) {
				hit = append(hit, r)
			}
		}
		slices.Sort(hit)
		out = h.failRegions(hit, errors.New(ev.Reason), gone)
		if !h.failed {
			// A canceling region may have lost its last running task.
			out = append(out, h.due()...)
		}
	case GlobalFailure:
		h.advance(ev.Now)
		var hit []int
		for r, s := range h.state {
			if s == Running || s == Restoring {
				hit = append(hit, r)
			}
		}
		out = h.failRegions(hit, fmt.Errorf("global failure: %s", ev.Reason), nil)
	case TaskTerminal:
		if r, ok := h.index[ev.Task]; ok && h.state[r] == Canceling {
			delete(h.pending[r], ev.Task)
			out = h.due()
		}
	case TaskRunning:
		r, ok := h.index[ev.Task]
		if !ok || h.state[r] != Restoring {
			return nil
		}
		delete(h.pending[r], ev.Task)
		if len(h.pending[r]) == 0 {
			h.state[r] = Running
			if h.suspended && !slices.ContainsFunc(h.state, func(s RegionState) bool { return s != Running }) {
				h.suspended = false
				out = append(out, ResumeCheckpointing{})
			}
		}
	case Tick:
		h.advance(ev.Now)
		out = h.due()
	}
	return out
}

// failRegions asks the strategy once for the failure and moves the regions
// hit to Canceling; tasks in gone are already terminal.
func (h *Handler) failRegions(hit []int, cause error, gone map[checkpoint.TaskID]bool) []Action {
	if len(hit) == 0 {
		return nil
	}
	d := h.strategy.OnFailure(h.now)
	if !d.Restart {
		return h.fail(fmt.Errorf("%s: %w", d.Reason, cause))
	}
	h.restarts++
	var out []Action
	if !h.suspended {
		h.suspended = true
		out = append(out, SuspendCheckpointing{Reason: fmt.Sprintf("%s: %v", h.restarting(hit), cause)})
	}
	var cancel []checkpoint.TaskID
	for _, r := range hit {
		h.state[r] = Canceling
		h.restartAt[r] = h.now.Add(d.Delay)
		h.pending[r] = map[checkpoint.TaskID]bool{}
		for _, t := range h.regions[r] {
			if !gone[t] {
				h.pending[r][t] = true
				cancel = append(cancel, t)
			}
		}
	}
	if len(cancel) > 0 {
		out = append(out, Cancel{Tasks: cancel})
	}
	if d.Delay > 0 {
		out = append(out, ArmTimer{At: h.now.Add(d.Delay)})
	}
	return append(out, h.due()...)
}

// due restarts, in one action, every region whose tasks all stopped and
// whose delay, counted from the failure, has passed.
func (h *Handler) due() []Action {
	var ready []int
	for r, s := range h.state {
		if s == Canceling && len(h.pending[r]) == 0 {
			h.state[r] = Waiting
		}
		if h.state[r] == Waiting && !h.now.Before(h.restartAt[r]) {
			h.state[r] = Restoring
			h.pending[r] = map[checkpoint.TaskID]bool{}
			for _, t := range h.regions[r] {
				h.pending[r][t] = true
			}
			ready = append(ready, r)
		}
	}
	if len(ready) == 0 {
		return nil
	}
	return []Action{Restart{Regions: ready}}
}

// restarting names the regions hit, for messages such as the coordinator's
// rejection of a trigger request: "region 1 is restarting".
func (h *Handler) restarting(hit []int) string {
	switch {
	case len(hit) == 1:
		return fmt.Sprintf("region %d is restarting", hit[0])
	case len(hit) == len(h.regions):
		return "every region is restarting"
	}
	s := "regions"
	for i, r := range hit {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf(" %d", r)
	}
	return s + " are restarting"
}

func (h *Handler) fail(cause error) []Action {
	h.failed = true
	return []Action{FailJob{Cause: cause}}
}

// advance moves the clock forward; time never goes back.
func (h *Handler) advance(now time.Time) {
	if now.After(h.now) {
		h.now = now
	}
}
