package reactive

import (
	"fmt"
	"time"
)

// Config is the rule's timing (jobmanager.adaptive-scheduler.* keys).
type Config struct {
	// Stabilization is how long the slots must stay without growing
	// before the job scales up to them
	// (resource-stabilization-timeout).
	Stabilization time.Duration
	// WaitTimeout is how long the job waits for slots it lost to come
	// back before it scales down to the slots that remain
	// (resource-wait-timeout).
	WaitTimeout time.Duration
	// MinIncrease is the least growth of the parallelism worth a rescale
	// (min-parallelism-increase, at least 1).
	MinIncrease int
	// RetryDelay is how long after a failed rescale the rule tries again.
	RetryDelay time.Duration
}

// Validate reports a configuration the rule cannot work with.
func (c Config) Validate() error {
	switch {
	case c.Stabilization < 0:
		return fmt.Errorf("jobmanager.adaptive-scheduler.resource-stabilization-timeout %v: want at least 0", c.Stabilization)
	case c.WaitTimeout < 0:
		return fmt.Errorf("jobmanager.adaptive-scheduler.resource-wait-timeout %v: want at least 0", c.WaitTimeout)
	case c.MinIncrease < 1:
		return fmt.Errorf("jobmanager.adaptive-scheduler.min-parallelism-increase %d: want at least 1", c.MinIncrease)
	case c.RetryDelay < 0:
		return fmt.Errorf("reactive: retry delay %v: want at least 0", c.RetryDelay)
	}
	return nil
}

// Shape is what the rule knows of a run of the job.
type Shape struct {
	// Parallelism is the run's parallelism of the operators the program
	// did not pin.
	Parallelism int
	// Min is the least number of slots the job needs at any parallelism:
	// its largest pinned operator's parallelism (1 without any).
	Min int
	// Max is the largest parallelism the unpinned operators allow: their
	// smallest max parallelism (key groups).
	Max int
}

// Event is an input of the rule.
type Event interface{ isEvent() }

// SlotsChanged: the slots the job may use are now Total (a TaskManager
// registered or was lost); Why names the cause for the record.
type SlotsChanged struct {
	Total int
	Why   string
}

// Tick is the passing of time.
type Tick struct{}

// Running: a run of the job started with this shape (the submission, a
// recovery, or the run a rescale started). It ends a rescale in progress.
type Running struct{ Shape Shape }

// RescaleFailed: the rescale asked for was refused or failed; the job
// goes on at its parallelism.
type RescaleFailed struct{ Err string }

func (SlotsChanged) isEvent()  {}
func (Tick) isEvent()          {}
func (Running) isEvent()       {}
func (RescaleFailed) isEvent() {}

// Action is an output of the rule.
type Action interface{ isAction() }

// Rescale asks for the job at parallelism To, with the inputs behind it.
type Rescale struct {
	From, To int
	// Slots is the slots there were; Min and Max the bounds.
	Slots, Min, Max int
	// Down: slots were lost; the job cannot run at From and is to be
	// started again at To from its newest checkpoint.
	Down bool
	Why  string
}

// Note says what the rule now waits for, once each time that changes.
type Note struct{ Why string }

func (Rescale) isAction() {}
func (Note) isAction()    {}

// Machine is the rule's state.
type Machine struct {
	cfg   Config
	shape Shape
	known bool // a run has started
	slots int
	// grewAt is when the slots last grew.
	grewAt time.Time
	// shortSince is when the slots fell below what the run needs (zero:
	// they suffice).
	shortSince time.Time
	// pending is the parallelism of the rescale in progress (0: none).
	pending int
	retryAt time.Time
	note    string
}

// New returns a Machine with cfg, which must be valid.
func New(cfg Config) (*Machine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Machine{cfg: cfg}, nil
}

// Status is a snapshot of the rule's inputs and what it waits for.
type Status struct {
	Parallelism, Slots, Min, Max int
	// Pending is the parallelism of the rescale in progress (0: none).
	Pending int
	// ShortSince is when the slots fell below the run's need (zero: not).
	ShortSince time.Time
	Waiting    string
}

// Status returns the rule's state.
func (m *Machine) Status() Status {
	return Status{Parallelism: m.shape.Parallelism, Slots: m.slots, Min: m.shape.Min, Max: m.shape.Max, Pending: m.pending, ShortSince: m.shortSince, Waiting: m.note}
}

// Step applies ev at now and returns the actions.
func (m *Machine) Step(now time.Time, ev Event) []Action {
	switch e := ev.(type) {
	case SlotsChanged:
		if e.Total > m.slots {
			m.grewAt = now
		}
		m.slots = e.Total
	case Running:
		m.shape, m.known, m.pending = e.Shape, true, 0
		m.shape.Min = max(1, m.shape.Min)
	case RescaleFailed:
		m.pending = 0
		m.retryAt = now.Add(m.cfg.RetryDelay)
	case Tick:
	default:
		panic(fmt.Sprintf("reactive: unknown event %T", ev))
	}
	m.updateShort(now)
	return m.evaluate(now)
}

// need is the slots the run needs.
func (m *Machine) need() int { return max(m.shape.Parallelism, m.shape.Min) }

func (m *Machine) updateShort(now time.Time) {
	if !m.known || m.slots >= m.need() {
		m.shortSince = time.Time{}
	} else if m.shortSince.IsZero() {
		m.shortSince = now
	}
}

// evaluate applies the rule.
func (m *Machine) evaluate(now time.Time) []Action {
	if !m.known {
		return nil // nothing to decide, nothing to say before a run
	}
	if m.pending > 0 {
		return m.noteIf(fmt.Sprintf("rescale to %d in progress", m.pending))
	}
	p, lo, hi := m.shape.Parallelism, m.shape.Min, m.shape.Max
	if m.slots == 0 {
		return m.noteIf("no slots: waiting for a TaskManager")
	}
	if m.slots < lo {
		return m.noteIf(fmt.Sprintf("%d slots, fewer than the %d the job's pinned operators need at any parallelism: waiting for slots (slot.request.timeout)", m.slots, lo))
	}
	want := m.slots
	if hi > 0 && want > hi {
		want = hi
	}
	if now.Before(m.retryAt) {
		return m.noteIf(fmt.Sprintf("a rescale failed: trying again in %s", m.cfg.RetryDelay))
	}
	r := Rescale{From: p, To: want, Slots: m.slots, Min: lo, Max: hi}
	switch {
	case !m.shortSince.IsZero():
		until := m.shortSince.Add(m.cfg.WaitTimeout)
		if now.Before(until) {
			return m.noteIf(fmt.Sprintf("%d slots, fewer than the %d the job runs on: waiting %s for the lost ones to come back before scaling down to %d", m.slots, m.need(), m.cfg.WaitTimeout, want))
		}
		r.Down = true
		r.Why = fmt.Sprintf("%d slots, fewer than the %d the job runs on, for %s (resource-wait-timeout %s): scale down to %d", m.slots, m.need(), now.Sub(m.shortSince).Round(time.Millisecond), m.cfg.WaitTimeout, want)
		if hi > 0 && m.slots > hi {
			r.Why += fmt.Sprintf(" (max parallelism %d)", hi)
		}
	case want >= p+m.cfg.MinIncrease:
		until := m.grewAt.Add(m.cfg.Stabilization)
		if now.Before(until) {
			return m.noteIf(fmt.Sprintf("%d slots: waiting until they are stable for %s before scaling up from %d to %d", m.slots, m.cfg.Stabilization, p, want))
		}
		r.Why = fmt.Sprintf("%d slots, stable for %s (resource-stabilization-timeout %s): scale up from %d to %d", m.slots, now.Sub(m.grewAt).Round(time.Millisecond), m.cfg.Stabilization, p, want)
		if hi > 0 && m.slots > hi {
			r.Why += fmt.Sprintf(" (max parallelism %d)", hi)
		}
	default:
		why := fmt.Sprintf("runs at %d on %d slots", p, m.slots)
		switch {
		case want == p && hi > 0 && m.slots > hi:
			why += fmt.Sprintf(": at its max parallelism %d", hi)
		case want > p:
			why += fmt.Sprintf(": %d more is below min-parallelism-increase %d", want-p, m.cfg.MinIncrease)
		}
		return m.noteIf(why)
	}
	m.pending = want
	m.note = ""
	return []Action{r}
}

// noteIf returns a Note when why differs from the last one.
func (m *Machine) noteIf(why string) []Action {
	if why == m.note {
		return nil
	}
	m.note = why
	return []Action{Note{Why: why}}
}
