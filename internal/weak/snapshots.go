package weak

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/coordinator"
)

// Config configures Snapshots.
type Config struct {
	// Interval between a task's periodic snapshots
	// (execution.checkpointing.interval); 0: none, only final and
	// requested ones.
	Interval time.Duration
	// Timeout is how long a task may take to acknowledge its snapshot
	// (execution.checkpointing.timeout); 0 means
	// coordinator.DefaultTimeout.
	Timeout time.Duration
	// FirstID is the first snapshot id; 0 means 1. A JobManager restarted
	// after a crash starts above every id its previous run used.
	FirstID checkpoint.ID
	// Latest is each task's newest completed snapshot when the job starts
	// (a whole-job restart: an earlier run's, below FirstID); a task not
	// in it has none. It is the task's restore point until the task
	// completes one of its own, which then discards it (Complete.Discard)
	// as it would discard any previous snapshot of the task.
	Latest map[checkpoint.TaskID]checkpoint.ID
}

// Snapshots schedules and tracks every task's own snapshots. See the
// package doc for the rules; Step applies one event at a time.
type Snapshots struct {
	cfg   Config
	next  checkpoint.ID
	tasks []checkpoint.TaskID
	state map[checkpoint.TaskID]*task
	// persisting maps a snapshot whose metadata is being written to its
	// task.
	persisting map[checkpoint.ID]checkpoint.TaskID
	completed  int
	failed     int
	out        []Action
}

// task is one task's bookkeeping.
type task struct {
	index int
	// up: the task's current execution runs. ran: it ran once, so its
	// next schedule follows its restart, not the spread of the start.
	up, ran  bool
	finished bool
	// eod: the task read all its input, its next snapshot is final;
	// finalDone: that final snapshot completed, the task is finishing.
	eod, finalDone bool
	// soon: a requested snapshot waits for the one in flight to end.
	soon bool
	// failedFinal: the last snapshot to end was a final one that failed;
	// it is taken again an Interval later, not in a tight loop.
	failedFinal bool
	due         time.Time // next trigger; zero: none scheduled
	flight      *flight
	latest      checkpoint.ID
}

// flight is a task's snapshot in flight: triggered, then (acked) its
// metadata being written.
type flight struct {
	id       checkpoint.ID
	kind     checkpoint.Kind
	at       time.Time
	deadline time.Time
	acked    bool
	// orphan: the execution that took it stopped while its metadata was
	// written. It may still complete (and be the restore point), but a
	// final one does not finish the task's next execution, which reads
	// its input again.
	orphan bool
}

// NewSnapshots returns the bookkeeping of tasks' snapshots; the order of
// tasks is the order of the spread. Feed it Running as tasks run.
func NewSnapshots(cfg Config, tasks []checkpoint.TaskID) *Snapshots {
	if cfg.Timeout <= 0 {
		cfg.Timeout = coordinator.DefaultTimeout
	}
	if cfg.FirstID < 1 {
		cfg.FirstID = 1
	}
	s := &Snapshots{
		cfg: cfg, next: cfg.FirstID,
		tasks:      append([]checkpoint.TaskID(nil), tasks...),
		state:      map[checkpoint.TaskID]*task{},
		persisting: map[checkpoint.ID]checkpoint.TaskID{},
	}
	for i, t := range tasks {
		s.state[t] = &task{index: i, latest: cfg.Latest[t]}
	}
	return s
}

// Step applies ev and returns the actions to perform, in order. Events of
// tasks it was not given, and acks or declines of snapshots not in
// flight, are ignored.
func (s *Snapshots) Step(ev Event) []Action {
	s.out = nil
	switch ev := ev.(type) {
	case Running:
		if ts := s.state[ev.Task]; ts != nil {
			s.running(ev.Task, ts, ev.Now)
		}
	case Down:
		if ts := s.state[ev.Task]; ts != nil {
			s.down(ev.Task, ts, ev.Reason)
		}
	case Finished:
		if ts := s.state[ev.Task]; ts != nil {
			s.down(ev.Task, ts, "the task finished")
			ts.finished = true
		}
	case EndOfData:
		// A task deployed but not yet reported running may reach the end
		// of its input first: its final snapshot is then triggered as it
		// runs.
		if ts := s.state[ev.Task]; ts != nil && !ts.finished && !ts.eod {
			ts.eod = true
			if ts.up && ts.flight == nil {
				s.trigger(ev.Task, ts, ev.Now)
			}
		}
	case Ack:
		ts := s.state[ev.Task]
		if ts == nil || ts.flight == nil || ts.flight.id != ev.ID || ts.flight.acked {
			break
		}
		f := ts.flight
		f.acked = true
		s.persisting[f.id] = ev.Task
		s.emit(Persist{Task: ev.Task, ID: f.id, Kind: f.kind, Timestamp: f.at, State: ev.State})
	case Decline:
		ts := s.state[ev.Task]
		if ts == nil || ts.flight == nil || ts.flight.id != ev.ID || ts.flight.acked {
			break
		}
		cause := coordinator.CauseDeclined
		if ev.Storage {
			cause = coordinator.CauseStorage
		}
		s.abort(ev.Task, ts, fmt.Sprintf("declined by task %d/%d: %s", ev.Task.Vertex, ev.Task.Subtask, ev.Reason), cause)
		s.ended(ev.Task, ts, ev.Now)
	case Persisted:
		s.persisted(ev)
	case Tick:
		s.tick(ev.Now)
	case Request:
		for _, t := range s.tasks {
			ts := s.state[t]
			switch {
			case !ts.up || ts.finalDone:
			case ts.flight != nil:
				ts.soon = true
			default:
				s.trigger(t, ts, ev.Now)
			}
		}
	default:
		panic(fmt.Sprintf("weak: unknown event %T", ev))
	}
	return s.out
}

func (s *Snapshots) emit(a Action) { s.out = append(s.out, a) }

// running schedules a task that runs: its first snapshot at its place in
// the spread, a restarted task's an Interval after it runs again.
func (s *Snapshots) running(t checkpoint.TaskID, ts *task, now time.Time) {
	if ts.up {
		return
	}
	ts.up, ts.finished = true, false
	ts.due = time.Time{}
	if s.cfg.Interval > 0 {
		if ts.ran {
			ts.due = now.Add(s.cfg.Interval)
		} else {
			// Counted from when the task first runs, not from NewSnapshots:
			// a deployment that waited for slots would otherwise bring
			// every task up overdue, and they would snapshot at once.
			n := time.Duration(len(s.tasks))
			ts.due = now.Add(s.cfg.Interval * time.Duration(ts.index+1) / n)
		}
	}
	ts.ran = true
	if ts.flight == nil && (ts.eod || !ts.due.IsZero() && !now.Before(ts.due)) {
		s.trigger(t, ts, now)
	}
}

// down stops a task's schedule; its snapshot in flight is aborted unless
// its metadata is being written, which is waited for.
func (s *Snapshots) down(t checkpoint.TaskID, ts *task, reason string) {
	ts.up, ts.eod, ts.finalDone, ts.soon = false, false, false, false
	ts.due = time.Time{}
	if ts.flight != nil && ts.flight.acked {
		ts.flight.orphan = true
	}
	if ts.flight != nil && !ts.flight.acked {
		s.abort(t, ts, fmt.Sprintf("task %d/%d stopped: %s", t.Vertex, t.Subtask, reason), coordinator.CauseTaskFailure)
	}
}

// trigger starts task's next snapshot: its final one after end of data.
func (s *Snapshots) trigger(t checkpoint.TaskID, ts *task, now time.Time) {
	kind := checkpoint.Periodic
	if ts.eod {
		kind = checkpoint.Final
	}
	ts.flight = &flight{id: s.next, kind: kind, at: now, deadline: now.Add(s.cfg.Timeout)}
	ts.due, ts.soon, ts.failedFinal = time.Time{}, false, false
	s.next++
	s.emit(Trigger{Task: t, ID: ts.flight.id, Kind: kind, Timestamp: now})
}

// abort fails task's snapshot in flight, only its.
func (s *Snapshots) abort(t checkpoint.TaskID, ts *task, reason string, cause coordinator.Cause) {
	f := ts.flight
	ts.flight = nil
	ts.failedFinal = f.kind == checkpoint.Final
	delete(s.persisting, f.id)
	s.failed++
	s.emit(Abort{Task: t, ID: f.id, Kind: f.kind, Reason: reason, Cause: cause})
}

// ended schedules a task's next snapshot once its last one ended, at now:
// a final one at once (a failed final one an Interval later), a requested
// one at once, else a periodic one an Interval later.
func (s *Snapshots) ended(t checkpoint.TaskID, ts *task, now time.Time) {
	if !ts.up || ts.finalDone {
		return
	}
	switch {
	case ts.eod && ts.failedFinal && s.cfg.Interval > 0:
		ts.due = now.Add(s.cfg.Interval)
	case ts.eod || ts.soon:
		s.trigger(t, ts, now)
	case s.cfg.Interval > 0:
		ts.due = now.Add(s.cfg.Interval)
	}
}

func (s *Snapshots) persisted(ev Persisted) {
	t, ok := s.persisting[ev.ID]
	if !ok {
		return
	}
	delete(s.persisting, ev.ID)
	ts := s.state[t]
	f := ts.flight
	if ev.Err != nil {
		cause, what := coordinator.CauseStorage, "write the metadata"
		if ev.Registration {
			cause, what = coordinator.CauseRegistration, "registration"
		}
		s.abort(t, ts, fmt.Sprintf("task %d/%d's snapshot %d: %s: %v", t.Vertex, t.Subtask, f.id, what, ev.Err), cause)
		s.ended(t, ts, ev.Now)
		return
	}
	ts.flight = nil
	ts.failedFinal = false
	prev := ts.latest
	ts.latest = f.id
	s.completed++
	if f.kind == checkpoint.Final && ts.up && !f.orphan {
		ts.finalDone = true
	}
	s.emit(Complete{Task: t, ID: f.id, Kind: f.kind, Discard: prev})
	s.ended(t, ts, ev.Now)
}

// tick times out the snapshots not acknowledged in time, then triggers
// those due, in task order.
func (s *Snapshots) tick(now time.Time) {
	for _, t := range s.tasks {
		ts := s.state[t]
		if f := ts.flight; f != nil && !f.acked && !now.Before(f.deadline) {
			s.abort(t, ts, fmt.Sprintf("task %d/%d did not acknowledge within %s", t.Vertex, t.Subtask, s.cfg.Timeout), coordinator.CauseTimeout)
			s.ended(t, ts, now)
		}
	}
	for _, t := range s.tasks {
		ts := s.state[t]
		if ts.up && !ts.finalDone && ts.flight == nil && !ts.due.IsZero() && !now.Before(ts.due) {
			s.trigger(t, ts, now)
		}
	}
}

// NextDeadline is when Snapshots wants a Tick: the earliest trigger due
// of a running task or acknowledgement timeout.
func (s *Snapshots) NextDeadline() (time.Time, bool) {
	var at time.Time
	earlier := func(t time.Time) {
		if !t.IsZero() && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	for _, t := range s.tasks {
		ts := s.state[t]
		switch {
		case ts.flight != nil && !ts.flight.acked:
			earlier(ts.flight.deadline)
		case ts.flight == nil && ts.up && !ts.finalDone:
			earlier(ts.due)
		}
	}
	return at, !at.IsZero()
}

// Latest returns task's newest completed snapshot, its restore point; 0 if
// it has none.
func (s *Snapshots) Latest(t checkpoint.TaskID) checkpoint.ID {
	if ts := s.state[t]; ts != nil {
		return ts.latest
	}
	return 0
}

// InFlight returns task's snapshot in flight, and whether its metadata is
// being written (acked); ok is false when none is.
func (s *Snapshots) InFlight(t checkpoint.TaskID) (id checkpoint.ID, acked, ok bool) {
	ts := s.state[t]
	if ts == nil || ts.flight == nil {
		return 0, false, false
	}
	return ts.flight.id, ts.flight.acked, true
}

// Persisting reports whether task's snapshot metadata is being written:
// its restart waits for the write, which may still complete its restore
// point.
func (s *Snapshots) Persisting(t checkpoint.TaskID) bool {
	_, acked, ok := s.InFlight(t)
	return ok && acked
}

// Counts returns how many task snapshots completed and failed (declined,
// timed out, failed to persist, or abandoned by their task's stop).
func (s *Snapshots) Counts() (completed, failed int) { return s.completed, s.failed }

// NextID is the id the next snapshot takes.
func (s *Snapshots) NextID() checkpoint.ID { return s.next }
