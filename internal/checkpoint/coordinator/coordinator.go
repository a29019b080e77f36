package coordinator

import (
	"fmt"
	"slices"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
)

// Coordinator is the JobManager side of aligned checkpointing as a pure state
// machine. It is not safe for concurrent use: one driver goroutine owns it.
type Coordinator struct {
	cfg     Config
	tasks   []checkpoint.TaskID
	isTask  map[checkpoint.TaskID]bool
	sources []checkpoint.TaskID
	nextID  checkpoint.ID
	pending []*pending // ascending ids

	// now is the latest time any event carried; timed says whether the
	// event being stepped carries one.
	now   time.Time
	timed bool
	// nextPeriodic is when the next periodic trigger is due, lastEnd when
	// the last checkpoint completed or failed (zero: never), the start of
	// the min pause.
	nextPeriodic time.Time
	lastEnd      time.Time
	// Ack, Decline and Reset carry no time. A failure or reset they cause
	// is stamped with the time of the next timed event, which makes the
	// min pause and the restarted interval start no earlier than the
	// truth; NextDeadline asks for that event at once.
	endUnstamped      bool
	scheduleUnstamped bool

	ended bool // EndOfInput seen: only the final checkpoint is taken
	// finalDue: the final checkpoint is to be triggered as soon as no
	// pending checkpoint still collects acknowledgements. Its barrier must
	// not reach a task that still records or aligns an older checkpoint
	// (unaligned mode lets it overtake that checkpoint's barrier on
	// another channel): that task would give the older one up as
	// subsumed, a failure, though nothing went wrong.
	finalDue    bool
	consecutive int // consecutive failures
	stats       Stats
	out         []Action

	// suspended (with its reason) between Suspend and Resume: nothing is
	// triggered.
	suspended     bool
	suspendReason string

	// storage is the state of failing checkpoint storage (storage.go);
	// openSince is when the oldest transaction a two-phase-commit sink
	// may hold open began: the trigger of the last completed checkpoint,
	// or the start.
	storage   storageState
	openSince time.Time
}

// New returns a coordinator for a job of the given tasks (every task must
// acknowledge a checkpoint) and sources (the tasks a Trigger goes to). The
// first checkpoint gets nextID, which continues after the checkpoint a job
// restored from. The first periodic checkpoint is due one interval after
// now. New panics if cfg is invalid, tasks is empty or nextID < 1: those are
// bugs of the caller, who validates configuration first.
func New(cfg Config, tasks []checkpoint.TaskID, sources []checkpoint.TaskID, nextID checkpoint.ID, now time.Time) *Coordinator {
	if err := cfg.Validate(); err != nil {
		panic(fmt.Sprintf("coordinator: invalid config: %v", err))
	}
	if len(tasks) == 0 {
		panic("coordinator: a job needs at least one task")
	}
	if nextID < 1 {
		panic(fmt.Sprintf("coordinator: checkpoint ids start at 1, got next id %d", nextID))
	}
	c := &Coordinator{
		cfg:       cfg.withDefaults(),
		isTask:    make(map[checkpoint.TaskID]bool, len(tasks)),
		sources:   slices.Clone(sources),
		nextID:    nextID,
		now:       now,
		openSince: now,
	}
	for _, t := range tasks {
		if !c.isTask[t] {
			c.isTask[t] = true
			c.tasks = append(c.tasks, t)
		}
	}
	c.nextPeriodic = now.Add(c.cfg.Interval)
	return c
}

// Sources returns the tasks a Trigger action goes to.
func (c *Coordinator) Sources() []checkpoint.TaskID { return slices.Clone(c.sources) }

// Pending returns the ids of the pending checkpoints, persisting ones
// included, in ascending order.
func (c *Coordinator) Pending() []checkpoint.ID {
	ids := make([]checkpoint.ID, len(c.pending))
	for i, p := range c.pending {
		ids[i] = p.id
	}
	return ids
}

// Persisting returns the ids of checkpoints whose metadata is being written.
// After a Reset or Suspend the driver must wait until this is empty before
// it picks the newest completed checkpoint to restore: a write in flight
// may still complete a newer one.
func (c *Coordinator) Persisting() []checkpoint.ID {
	var ids []checkpoint.ID
	for _, p := range c.pending {
		if p.persisting {
			ids = append(ids, p.id)
		}
	}
	return ids
}

// Suspended reports whether checkpointing is suspended, and why.
func (c *Coordinator) Suspended() (reason string, ok bool) { return c.suspendReason, c.suspended }

// Step applies one event and returns the actions the driver must perform,
// in order.
func (c *Coordinator) Step(ev Event) []Action {
	c.out = nil
	c.timed = false
	switch ev := ev.(type) {
	case Tick:
		c.observe(ev.Now)
		c.expire()
		c.storageTimedOut()
		c.maybeProbe()
		if due, ok := c.periodicDue(); ok && !c.now.Before(due) {
			c.trigger(checkpoint.Periodic)
			c.nextPeriodic = c.now.Add(c.cfg.Interval)
		}
	case TriggerRequest:
		c.observe(ev.Now)
		switch {
		case c.suspended:
			c.emit(Rejected{Reason: "checkpointing suspended: " + c.suspendReason})
		case c.ended:
			c.emit(Rejected{Reason: "all sources reached end of input: only the final checkpoint is taken"})
		case len(c.pending) >= c.cfg.MaxConcurrent:
			reason := fmt.Sprintf("%d pending, execution.checkpointing.max-concurrent-checkpoints is %d", len(c.pending), c.cfg.MaxConcurrent)
			if c.cfg.MinPause > 0 {
				reason += " (min-pause > 0 implies 1)"
			}
			c.emit(Rejected{Reason: "too many concurrent checkpoints: " + reason})
		case ev.Kind == checkpoint.Savepoint:
			c.trigger(checkpoint.Savepoint)
		default:
			c.trigger(checkpoint.Periodic)
		}
	case EndOfInput:
		c.observe(ev.Now)
		if !c.ended {
			c.ended = true
			if !c.suspended { // else at Resume
				c.finalDue = true
			}
		}
	case Ack:
		p := c.find(ev.ID)
		if p == nil || p.persisting || !c.isTask[ev.Task] || !p.ack(ev.Task, ev.State) {
			return nil // late, unknown or duplicate: nothing to learn
		}
		if len(p.acks) == len(c.tasks) {
			p.persisting = true
			c.emit(Persist{ID: p.id, Kind: p.kind, Timestamp: p.ts, States: p.states(c.tasks)})
		}
	case Decline:
		p := c.find(ev.ID)
		if p == nil || p.persisting || !c.isTask[ev.Task] {
			return nil
		}
		cause := ev.Cause
		if cause != CauseStorage {
			cause = CauseDeclined
		}
		c.fail(p, fmt.Sprintf("declined by task %d/%d: %s", ev.Task.Vertex, ev.Task.Subtask, ev.Reason), cause)
	case Persisted:
		c.observe(ev.Now)
		c.persisted(ev)
	case StorageProbed:
		c.observe(ev.Now)
		c.probed(ev.Err)
	case Reset:
		c.reset("job failover: " + ev.Reason)
	case Suspend:
		c.reset("checkpointing suspended: " + ev.Reason)
		c.suspended, c.suspendReason = true, ev.Reason
	case Resume:
		c.observe(ev.Now)
		if c.suspended {
			c.suspended, c.suspendReason = false, ""
			c.nextPeriodic = c.now.Add(c.cfg.Interval)
			if c.ended {
				c.finalDue = true
			}
		}
	default:
		panic(fmt.Sprintf("coordinator: unknown event %T", ev))
	}
	if c.finalDue && !c.suspended && !c.collecting() && !c.storageBackingOff() {
		c.finalDue = false
		c.trigger(checkpoint.Final)
	}
	return c.out
}

// collecting reports whether a pending checkpoint still waits for
// acknowledgements (one being persisted has them all).
func (c *Coordinator) collecting() bool {
	return slices.ContainsFunc(c.pending, func(p *pending) bool { return !p.persisting })
}

// NextDeadline returns when the driver should send the next Tick: the next
// periodic trigger or the earliest timeout of a pending checkpoint. It
// returns false when no time-driven step is ahead.
func (c *Coordinator) NextDeadline() (time.Time, bool) {
	var best time.Time
	found := false
	consider := func(t time.Time) {
		if !found || t.Before(best) {
			best, found = t, true
		}
	}
	if c.cfg.Interval > 0 && !c.ended && !c.suspended && (c.endUnstamped || c.scheduleUnstamped) {
		consider(c.now) // learn the time now, see endUnstamped; Resume brings it when suspended
	}
	if due, ok := c.periodicDue(); ok {
		consider(due)
	}
	for _, p := range c.pending {
		if !p.persisting {
			consider(p.ts.Add(c.cfg.Timeout))
		}
	}
	if s := c.storage; s.failing && !s.probing && !c.suspended {
		consider(s.nextProbe)
	}
	if c.finalDue && c.storageBackingOff() {
		consider(c.storage.retryAt)
	}
	if s := c.storage; s.failing && !s.gaveUp && c.cfg.StorageFailureTimeout > 0 {
		consider(s.since.Add(c.cfg.StorageFailureTimeout))
	}
	return best, found
}

// observe advances the clock (never backwards) and stamps what waited for a
// time.
func (c *Coordinator) observe(now time.Time) {
	if now.After(c.now) {
		c.now = now
	}
	c.timed = true
	if c.endUnstamped {
		c.lastEnd, c.endUnstamped = c.now, false
	}
	if c.scheduleUnstamped {
		c.nextPeriodic, c.scheduleUnstamped = c.now.Add(c.cfg.Interval), false
	}
}

// periodicDue returns when the next periodic checkpoint may start, if one
// may start without another event than time passing.
func (c *Coordinator) periodicDue() (time.Time, bool) {
	if c.cfg.Interval <= 0 || c.ended || c.suspended || c.endUnstamped || c.scheduleUnstamped || len(c.pending) >= c.cfg.MaxConcurrent || c.storage.gaveUp {
		return time.Time{}, false
	}
	due := c.nextPeriodic
	if c.storage.failing && c.storage.retryAt.After(due) {
		due = c.storage.retryAt
	}
	if !c.lastEnd.IsZero() {
		if t := c.lastEnd.Add(c.cfg.MinPause); t.After(due) {
			due = t
		}
	}
	return due, true
}

func (c *Coordinator) trigger(kind checkpoint.Kind) {
	p := &pending{id: c.nextID, kind: kind, ts: c.now, acks: make(map[checkpoint.TaskID]checkpoint.TaskState, len(c.tasks))}
	c.nextID++
	c.pending = append(c.pending, p)
	c.stats.Triggered++
	c.emit(Trigger{ID: p.id, Timestamp: p.ts, Kind: kind})
}

// expire fails the pending checkpoints older than the timeout, oldest
// first. A failover on the way aborts the rest, hence the rescan.
func (c *Coordinator) expire() {
	for {
		i := slices.IndexFunc(c.pending, func(p *pending) bool {
			return !p.persisting && !c.now.Before(p.ts.Add(c.cfg.Timeout))
		})
		if i < 0 {
			return
		}
		c.fail(c.pending[i], fmt.Sprintf("expired after execution.checkpointing.timeout of %v", c.cfg.Timeout), CauseTimeout)
	}
}

// persisted ends a persisting checkpoint: completed, failed, or subsumed
// when a newer one completed while its metadata was being written. The
// subsumed case keeps completed ids increasing: a driver that restores the
// newest completed checkpoint never sees an older one complete later.
func (c *Coordinator) persisted(ev Persisted) {
	p := c.find(ev.ID)
	if p == nil || !p.persisting {
		return
	}
	switch {
	case p.id < c.stats.LastCompletedID:
		c.drop(p, fmt.Sprintf("subsumed by checkpoint %d", c.stats.LastCompletedID), true)
	case ev.Err != nil && p.orphaned:
		c.drop(p, fmt.Sprintf("persist metadata after job failover: %v", ev.Err), false)
	case ev.Err != nil && ev.Registration:
		c.fail(p, fmt.Sprintf("persist metadata: %v", ev.Err), CauseRegistration)
	case ev.Err != nil:
		c.fail(p, fmt.Sprintf("persist metadata: %v", ev.Err), CauseStorage)
	default:
		c.remove(p)
		c.storageRecovered()
		c.openSince = p.ts
		c.stats.Completed++
		c.stats.LastCompletedID = p.id
		c.stats.LastCompletedDuration = c.now.Sub(p.ts)
		c.consecutive = 0
		c.lastEnd = c.now
		c.emit(NotifyComplete{ID: p.id, Kind: p.kind})
		for _, q := range slices.Clone(c.pending) {
			if q.id < p.id && !q.persisting {
				c.drop(q, fmt.Sprintf("subsumed by checkpoint %d", p.id), true)
			}
		}
	}
}

// fail aborts p as a failure and asks for a failover when a final
// checkpoint failed or the failures are no longer tolerable. A storage
// failure does neither (storage.go).
func (c *Coordinator) fail(p *pending, reason string, cause Cause) {
	c.remove(p)
	c.stats.Failed++
	c.stats.FailedByCause[cause]++
	c.emit(Abort{ID: p.id, Kind: p.kind, Reason: reason, Cause: cause})
	c.markEnd()
	if cause == CauseStorage {
		if p.kind == checkpoint.Final && c.ended && !c.suspended {
			c.finalDue = true // retried when the backoff allows, see periodic
		}
		c.storageFailed(reason)
		return
	}
	c.consecutive++
	var why string
	switch {
	case c.consecutive <= c.cfg.TolerableFailures:
		// Never while suspended (Resume takes the final checkpoint then),
		// though no checkpoint can fail as a failure meanwhile today:
		// Suspend aborts the pending ones and orphans the persisting ones.
		if p.kind == checkpoint.Final && c.ended && !c.suspended {
			// A failed final checkpoint is tolerated like any other, as in
			// Flink. The input has ended, so only a final checkpoint can
			// let the tasks finish: take another one at once (barriers
			// still flow after EndOfData).
			c.finalDue = true
		}
		return
	case p.kind == checkpoint.Final:
		why = fmt.Sprintf("final checkpoint %d failed: %s", p.id, reason)
	default:
		why = fmt.Sprintf("checkpoint %d failed (%s): %d consecutive failures exceed execution.checkpointing.tolerable-failed-checkpoints=%d",
			p.id, reason, c.consecutive, c.cfg.TolerableFailures)
	}
	c.consecutive = 0
	c.reset("job failover: " + why)
	c.emit(Failover{Reason: why})
}

// reset aborts every pending checkpoint but those being persisted and
// restarts the periodic schedule. A persisting checkpoint is left alone on
// purpose: its metadata may already be on disk, and a checkpoint whose
// metadata exists is complete: a restore may pick it, and its sinks may
// commit on it (docs/architecture.md, "Design rules", 5). If its Persisted
// reports success it completes as usual; the driver, which restores the
// newest completed checkpoint after a failover, waits for Persisting to
// drain first. If the write failed, the checkpoint is aborted without counting a
// failure: the attempt it belonged to is gone, and a failed final
// checkpoint of that attempt must not fail over the restarted job.
func (c *Coordinator) reset(reason string) {
	for _, p := range slices.Clone(c.pending) {
		if p.persisting {
			p.orphaned = true
		} else {
			c.drop(p, reason, false)
		}
	}
	// The restarted job reaches the end of its input again and needs a new
	// final checkpoint; its periodic checkpoints start one interval after
	// the reset, giving the tasks time to come up.
	c.ended, c.finalDue = false, false
	if c.timed {
		c.nextPeriodic = c.now.Add(c.cfg.Interval)
	} else {
		c.scheduleUnstamped = true
	}
}

// drop aborts p without counting a failure.
func (c *Coordinator) drop(p *pending, reason string, subsumed bool) {
	c.remove(p)
	c.stats.Aborted++
	cause := CauseTaskFailure
	if subsumed {
		cause = CauseSubsumed
	}
	c.emit(Abort{ID: p.id, Kind: p.kind, Reason: reason, Subsumed: subsumed, Cause: cause})
}

// markEnd starts the min pause at the current event's time, or at the next
// event's if this one carries none.
func (c *Coordinator) markEnd() {
	if c.timed {
		c.lastEnd = c.now
	} else {
		c.endUnstamped = true
	}
}

func (c *Coordinator) find(id checkpoint.ID) *pending {
	for _, p := range c.pending {
		if p.id == id {
			return p
		}
	}
	return nil
}

func (c *Coordinator) remove(p *pending) {
	c.pending = slices.DeleteFunc(c.pending, func(q *pending) bool { return q == p })
}

func (c *Coordinator) emit(a Action) { c.out = append(c.out, a) }
