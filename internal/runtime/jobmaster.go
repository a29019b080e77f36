package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/coordinator"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/failover"
	"github.com/weirstream/weir/internal/restart"
)

type jmEventKind uint8

const (
	evPrepared jmEventKind = iota
	evState
	evAck
	evDecline
	evEndOfData
	evPersisted
	evSlots
	evTaskManagerLost
)

// jmEvent is a message to the JobMaster loop: a TaskManager's report
// (through the JobMasterGateway) or a metadata writer's result.
type jmEvent struct {
	kind      jmEventKind
	exec      ExecutionID
	state     ExecState
	id        checkpoint.ID
	taskState checkpoint.TaskState
	reason    string
	err       error
	gw        TaskManagerGateway
}

// jmExecution is the JobMaster's view of a subtask's current execution.
type jmExecution struct {
	attempt int
	state   ExecState
	tm      TaskManagerGateway
}

// JobMaster runs one job: it deploys the job's regions to TaskManagers,
// drives the checkpoint coordinator (one for the job's whole life) and the
// failover handler, and restarts a failed region from the newest
// completed checkpoint while the other regions run on. It owns no task:
// everything it learns comes through its inbox, everything it asks goes
// through TaskManagerGateways. One goroutine (run) owns all its state.
type JobMaster struct {
	cfg   JobConfig
	jg    *JobGraph
	store *storage.FS
	log   *slog.Logger
	spec  JobSpec
	in    *inbox
	// place says which TaskManager runs a subtask; local mode has one.
	place func(checkpoint.TaskID) TaskManagerGateway
	tms   []TaskManagerGateway

	// Cluster mode (jobmaster_slots.go); slots is nil in local mode.
	slots       Slots
	slotTimeout time.Duration
	// preparedOn are the TaskManagers the job was prepared on.
	preparedOn map[TaskManagerGateway]bool
	// waiting is a deployment that waits for slots.
	waiting *slotWait
	// reserveIDs persists a bound on the checkpoint ids this run uses
	// (cluster mode); reserved is the bound persisted last.
	reserveIDs func(upTo checkpoint.ID) error
	reserved   checkpoint.ID

	regions  [][]checkpoint.TaskID
	regionOf map[checkpoint.TaskID]int
	handler  *failover.Handler
	strategy *recordingStrategy
	coord    *coordinator.Coordinator
	all      []checkpoint.TaskID
	sources  []checkpoint.TaskID
	execs    map[checkpoint.TaskID]*jmExecution
	live     int // executions deployed and not terminal
	finished int // executions FINISHED
	// finalDone: a final checkpoint completed, so tasks may be finishing.
	// A finished task cannot ack another checkpoint: from now on a failure
	// restarts every region, which takes a new final checkpoint together.
	finalDone bool

	// desc is Describe(jg), sent to TaskManagers in cluster mode.
	desc string

	// initial is the restore point of the job's start; firstOwn the
	// first checkpoint id this run takes (see restorePointForRestart).
	initial  *restorePoint
	firstOwn checkpoint.ID

	fq         []failover.Event // failover events not yet stepped
	timers     []time.Time      // failover handler ticks asked for
	restarts   []int            // regions due for a restart, waiting for persisting writes
	persisting int              // metadata writes in flight
	deployed   bool

	savepoints map[checkpoint.ID][]triggerRequest
	queued     []triggerRequest // waiting for a free checkpoint slot
	draining   bool
	triggered  map[checkpoint.ID]time.Time
	completed  map[checkpoint.ID]bool
	eod        map[checkpoint.TaskID]bool
	// stops are stop requests of the job, answered when it ended.
	stops []pendingStop
	// shared reference-counts the files of incremental checkpoints
	// (shared.go).
	shared sharedFiles

	// failCause is the failure the handler is being told about; end is
	// why the job ends (nil: finished), fatal an error returned as is.
	failCause error
	end       error
	fatal     error
}

// recordingStrategy remembers the restart strategy's last decision, so
// that a failed job names the strategy's reason beside the root cause.
type recordingStrategy struct {
	restart.Strategy
	last restart.Decision
}

func (s *recordingStrategy) OnFailure(now time.Time) restart.Decision {
	s.last = s.Strategy.OnFailure(now)
	return s.last
}

// newJobMaster returns the JobMaster of jg; start completes it once the
// initial restore point is known.
func newJobMaster(cfg JobConfig, jg *JobGraph, store *storage.FS) *JobMaster {
	jm := &JobMaster{
		cfg: cfg, jg: jg, store: store, log: cfg.Logger,
		spec:       JobSpec{Name: cfg.JobName, Kind: "local"},
		in:         newInbox(),
		regions:    Regions(jg),
		execs:      map[checkpoint.TaskID]*jmExecution{},
		savepoints: map[checkpoint.ID][]triggerRequest{},
		triggered:  map[checkpoint.ID]time.Time{},
		completed:  map[checkpoint.ID]bool{},
		eod:        map[checkpoint.TaskID]bool{},
	}
	jm.regionOf = failover.RegionIndex(jm.regions)
	jm.strategy = &recordingStrategy{Strategy: cfg.Restart}
	jm.handler = failover.NewHandler(jm.regions, jm.strategy)
	for _, v := range jg.Vertices {
		for s := range v.Parallelism {
			t := checkpoint.TaskID{Vertex: v.ID, Subtask: s}
			jm.all = append(jm.all, t)
			if v.IsSource() {
				jm.sources = append(jm.sources, t)
			}
			jm.execs[t] = &jmExecution{state: ExecCanceled}
		}
	}
	return jm
}

// start sets the job's initial restore point (nil: a fresh start) and
// creates the coordinator, whose ids continue after next-1, the newest
// completed checkpoint in storage, and after the initial point. Those ids
// are this run's own: after a failure a region restores the newest of
// them, or else the initial point.
func (jm *JobMaster) start(initial *restorePoint, next checkpoint.ID) {
	jm.initial = initial
	jm.firstOwn = next
	if initial != nil {
		jm.firstOwn = max(next, initial.md.ID+1)
	}
	jm.coord = coordinator.New(jm.cfg.Checkpoint, jm.all, jm.sources, jm.firstOwn, jm.cfg.Now())
}

// run prepares the job on its TaskManagers, deploys it, and drives it
// until it finishes, fails for good or ctx ends; then it cancels whatever
// still runs and waits until every execution and metadata write ended.
func (jm *JobMaster) run(ctx context.Context) error {
	st := jm.cfg.Status
	var vertices []VertexInfo
	for _, v := range jm.jg.Vertices {
		vertices = append(vertices, VertexInfo{ID: v.ID, Name: v.Name(), Parallelism: v.Parallelism})
	}
	st.setVertices(vertices, len(jm.all))
	desc := Describe(jm.jg)
	for _, tm := range jm.tms {
		tm.PrepareJob(jm.spec, desc)
	}
	if jm.slots != nil {
		// Cluster mode prepares each TaskManager just before its first
		// deployment (jobmaster_slots.go).
		jm.desc = desc
		jm.prepared(ctx, nil)
	}
	requests := st.mon().requests
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var evs []jmEvent
	for jm.end == nil && jm.fatal == nil && (!jm.deployed || jm.finished < len(jm.all)) {
		timer.Reset(jm.nextDeadline())
		select {
		case <-jm.in.ready:
			evs = jm.in.take(evs[:0])
			for _, ev := range evs {
				jm.handle(ctx, ev)
			}
		case <-timer.C:
			now := jm.cfg.Now()
			jm.slotTick(now)
			jm.perform(jm.coord.Step(coordinator.Tick{Now: now}))
			jm.timers = slices.DeleteFunc(jm.timers, func(at time.Time) bool { return !at.After(now) })
			jm.feed(failover.Tick{Now: now})
		case req := <-requests:
			jm.serve(req)
		case <-ctx.Done():
			jm.end = ctx.Err()
		}
		jm.runFailover(ctx)
	}
	jm.teardown()
	return jm.result(ctx)
}

// nextDeadline is how long the loop may wait for an event: until the
// coordinator's next deadline or the earliest failover timer.
func (jm *JobMaster) nextDeadline() time.Duration {
	var at time.Time
	if d, ok := jm.coord.NextDeadline(); ok {
		at = d
	}
	for _, t := range jm.timers {
		if at.IsZero() || t.Before(at) {
			at = t
		}
	}
	if w := jm.waiting; w != nil && (at.IsZero() || w.next.Before(at)) {
		at = w.next
	}
	if at.IsZero() {
		return time.Hour
	}
	return max(at.Sub(jm.cfg.Now()), 0)
}

// teardown cancels every live execution and keeps consuming events until
// every execution and metadata writer stopped: a metadata write that
// succeeds now still completes its checkpoint, because the file exists
// and a restore will use it.
func (jm *JobMaster) teardown() {
	jm.draining = true
	jm.cancel(jm.all)
	var evs []jmEvent
	for jm.live > 0 || jm.persisting > 0 {
		<-jm.in.ready
		evs = jm.in.take(evs[:0])
		for _, ev := range evs {
			jm.handle(context.Background(), ev)
		}
	}
	failed := jm.end != nil || jm.fatal != nil
	if failed {
		reason := "the job failed"
		if jm.end != nil {
			reason = jm.end.Error()
		} else if jm.fatal != nil {
			reason = jm.fatal.Error()
		}
		jm.perform(jm.coord.Step(coordinator.Reset{Reason: reason}))
	}
	// No task writes any more: remove what checkpoints that never
	// completed left behind (an abort's Discard can race with a late
	// asynchronous write that recreates the folder).
	jm.discardIncomplete(nil)
	jm.sweepShared()
	reason := jm.end
	if reason == nil {
		reason = jm.fatal
	}
	if reason == nil {
		reason = errors.New("the job finished")
	}
	jm.failRequests(reason)
	for _, tm := range jm.tms {
		tm.ReleaseJob(jm.spec.Name)
	}
	jm.cfg.Status.setTaskSource(nil)
}

// result sets the job's final state, answers stop requests and returns
// what Execute returns.
func (jm *JobMaster) result(ctx context.Context) error {
	st := jm.cfg.Status
	now := jm.cfg.Now()
	switch {
	case ctx.Err() != nil:
		st.setState(StateCanceled, now)
		jm.answerStops(ctx.Err())
		return ctx.Err()
	case jm.fatal != nil:
		st.setState(StateFailed, now)
		jm.answerStops(jm.fatal)
		return jm.fatal
	case jm.end != nil:
		st.setState(StateFailed, now)
		jm.answerStops(jm.end)
		return jm.end
	}
	st.setState(StateFinished, now)
	jm.removeLocalRecovery()
	jm.answerStops(nil)
	return nil
}

// handle applies one event. Reports of an execution that is not its
// task's current one are dropped: they come from a cancelled attempt.
func (jm *JobMaster) handle(ctx context.Context, ev jmEvent) {
	now := jm.cfg.Now()
	jm.log.Debug("jobmaster event", "kind", ev.kind, "exec", ev.exec.String(), "state", ev.state, "id", ev.id, "reason", ev.reason, "err", ev.err)
	if ev.kind == evPrepared {
		jm.prepared(ctx, ev.err)
		return
	}
	if ev.kind == evSlots {
		jm.retryWaiting()
		return
	}
	if ev.kind == evTaskManagerLost {
		jm.taskManagerLost(ev.gw, ev.reason, now)
		return
	}
	if ev.kind == evPersisted {
		jm.persisting--
		jm.perform(jm.coord.Step(coordinator.Persisted{ID: ev.id, Err: ev.err, Now: now}))
		jm.restartDue(ctx)
		return
	}
	e := jm.execs[ev.exec.Task]
	if e == nil || e.attempt != ev.exec.Attempt || e.state.Terminal() {
		return
	}
	t := ev.exec.Task
	switch ev.kind {
	case evAck:
		jm.cfg.Status.updateCheckpoint(ev.id, func(c *CheckpointStats) { c.acknowledged(ev.taskState, now) })
		jm.perform(jm.coord.Step(coordinator.Ack{Task: t, ID: ev.id, State: ev.taskState}))
	case evDecline:
		jm.perform(jm.coord.Step(coordinator.Decline{Task: t, ID: ev.id, Reason: ev.reason}))
	case evEndOfData:
		if jm.eod[t] || jm.draining {
			return
		}
		if s := jm.handler.State(jm.regionOf[t]); s == failover.Canceling || s == failover.Waiting {
			// A task of a failing region, not yet cancelled, ran to the
			// end of its input: its region restarts and reads it again.
			// Counted, it would complete the end-of-data set while
			// checkpointing is suspended, and the resume would take the
			// final checkpoint before the restarted tasks read anything.
			return
		}
		jm.eod[t] = true
		if len(jm.eod) == len(jm.all) {
			jm.perform(jm.coord.Step(coordinator.EndOfInput{Now: now}))
		}
	case evState:
		jm.stateChanged(t, e, ev.state, ev.err, now)
	}
}

func (jm *JobMaster) stateChanged(t checkpoint.TaskID, e *jmExecution, st ExecState, err error, now time.Time) {
	e.state = st
	if st.Terminal() {
		jm.live--
	}
	if jm.draining {
		return
	}
	switch st {
	case ExecRunning:
		jm.feed(failover.TaskRunning{Task: t})
	case ExecFinished:
		jm.finished++
		jm.feed(failover.TaskTerminal{Task: t})
	case ExecCanceled:
		jm.feed(failover.TaskTerminal{Task: t})
	case ExecFailed:
		jm.taskFailed(t, err, now)
	}
}

// taskFailed tells the failover handler about a failed execution.
func (jm *JobMaster) taskFailed(t checkpoint.TaskID, err error, now time.Time) {
	if err == nil {
		err = errors.New("failed without an error")
	}
	r := jm.regionOf[t]
	if s := jm.handler.State(r); s == failover.Canceling || s == failover.Waiting {
		// Failing already: the task counts as stopped.
		jm.feed(failover.TaskFailed{Task: t, Err: err, Now: now})
		return
	}
	jm.cfg.Status.setFailure(err.Error())
	jm.failCause = err
	delete(jm.eod, t)
	unrecoverable := IsUnrecoverable(err)
	if !unrecoverable && jm.finalDone {
		// The final checkpoint completed, so tasks are finishing (some
		// may have, others will before they hear of this failure): a
		// finished task cannot take part in the final checkpoint of a
		// restarted region, so every region restarts (finished tasks
		// count as stopped).
		jm.log.Warn("task failed after others finished; restarting every region", "task", t, "cause", err)
		jm.feed(failover.GlobalFailure{Reason: err.Error(), Now: now})
		return
	}
	jm.log.Warn("task failed; restarting its region", "task", t, "region", r, "cause", err)
	jm.feed(failover.TaskFailed{Task: t, Err: err, Unrecoverable: unrecoverable, Now: now})
}

// feed queues an event for the failover handler; runFailover steps it.
func (jm *JobMaster) feed(ev failover.Event) { jm.fq = append(jm.fq, ev) }

// runFailover steps the queued failover events and performs the actions,
// which may queue more (a cancel of an execution that is terminal already
// answers at once).
func (jm *JobMaster) runFailover(ctx context.Context) {
	for len(jm.fq) > 0 && !jm.draining && jm.end == nil && jm.fatal == nil {
		ev := jm.fq[0]
		jm.fq = jm.fq[1:]
		for _, act := range jm.handler.Step(ev) {
			jm.performFailover(act)
		}
		jm.restartDue(ctx)
	}
	jm.fq = jm.fq[:0]
	jm.cfg.Status.Restarts.Store(int64(jm.handler.Restarts()))
	jm.updateState()
}

func (jm *JobMaster) performFailover(act failover.Action) {
	switch act := act.(type) {
	case failover.SuspendCheckpointing:
		jm.log.Info("checkpointing suspended", "reason", act.Reason)
		jm.perform(jm.coord.Step(coordinator.Suspend{Reason: act.Reason}))
	case failover.ResumeCheckpointing:
		jm.log.Info("checkpointing resumed")
		jm.perform(jm.coord.Step(coordinator.Resume{Now: jm.cfg.Now()}))
	case failover.Cancel:
		for _, t := range act.Tasks {
			// Its region restarts and reads its input again.
			delete(jm.eod, t)
		}
		jm.cancel(act.Tasks)
	case failover.ArmTimer:
		jm.timers = append(jm.timers, act.At)
	case failover.Restart:
		jm.restarts = append(jm.restarts, act.Regions...)
	case failover.FailJob:
		reason := jm.strategy.last.Reason
		if IsUnrecoverable(jm.failCause) {
			reason = "a restart cannot fix this failure"
		}
		cause := jm.failCause
		if cause == nil {
			cause = act.Cause
		}
		jm.end = &JobFailedError{Cause: cause, Restarts: jm.handler.Restarts(), Reason: reason}
	}
}

// cancel asks the TaskManagers to cancel the executions of tasks that
// still run; one that ended already counts as stopped at once.
func (jm *JobMaster) cancel(tasks []checkpoint.TaskID) {
	byTM := map[TaskManagerGateway][]ExecutionID{}
	var order []TaskManagerGateway
	for _, t := range tasks {
		e := jm.execs[t]
		if e.state.Terminal() {
			if !jm.draining {
				jm.feed(failover.TaskTerminal{Task: t})
			}
			continue
		}
		if _, ok := byTM[e.tm]; !ok {
			order = append(order, e.tm)
		}
		byTM[e.tm] = append(byTM[e.tm], ExecutionID{Task: t, Attempt: e.attempt})
	}
	for _, tm := range order {
		tm.Cancel(jm.spec.Name, byTM[tm])
	}
}

// anyRegionFailing reports whether a region is being cancelled or waits
// for its restart.
func (jm *JobMaster) anyRegionFailing() bool {
	for r := range jm.regions {
		if s := jm.handler.State(r); s == failover.Canceling || s == failover.Waiting {
			return true
		}
	}
	return false
}

// updateState shows RESTARTING while no region is deployed (the whole
// job restarts, as before regions existed) and RUNNING otherwise: a job
// whose other regions run on is running.
func (jm *JobMaster) updateState() {
	if !jm.deployed || jm.draining || jm.end != nil || jm.fatal != nil {
		return
	}
	restarting := true
	for r := range jm.regions {
		if s := jm.handler.State(r); s == failover.Running || s == failover.Restoring {
			restarting = false
			break
		}
	}
	if restarting {
		jm.cfg.Status.setState(StateRestarting, jm.cfg.Now())
	} else {
		jm.cfg.Status.setState(StateRunning, jm.cfg.Now())
	}
}

// prepared deploys the whole job once its TaskManagers prepared it.
func (jm *JobMaster) prepared(ctx context.Context, err error) {
	if err != nil {
		jm.fatal = fmt.Errorf("job %s: %w", jm.spec.Name, err)
		return
	}
	if jm.deployed {
		return
	}
	jm.deployed = true
	jm.cfg.Faults.Release()
	if rp := jm.initial; rp != nil {
		first := jm.execs[jm.all[0]].attempt // 0, or a cluster run's base
		jm.cfg.Status.restoring(rp.md.ID, first, jm.cfg.Now())
		jm.log.Info("restoring", "checkpoint", rp.md.ID, "path", rp.path, "attempt", first)
	}
	jm.deploy(jm.all, jm.initial)
	if jm.waiting == nil {
		jm.cfg.Status.setState(StateRunning, jm.cfg.Now())
	}
}

// restartDue restarts the regions the handler asked for once no metadata
// write is in flight: such a write may still complete a checkpoint, which
// must then be the one restored.
func (jm *JobMaster) restartDue(ctx context.Context) {
	if len(jm.restarts) == 0 || jm.persisting > 0 || jm.draining {
		return
	}
	regions := jm.restarts
	jm.restarts = nil
	rp, err := jm.restorePointForRestart(ctx)
	if err != nil {
		jm.fatal = err
		return
	}
	// Checkpointing is suspended: nothing is pending, so every checkpoint
	// triggered and not completed was aborted; remove what it left.
	jm.discardIncomplete(jm.coord.Pending())
	var tasks []checkpoint.TaskID
	for _, r := range regions {
		tasks = append(tasks, jm.regions[r]...)
	}
	slices.SortFunc(tasks, compareTaskID)
	jm.cfg.Faults.Release()
	if rp != nil {
		// Restore timing follows one attempt: that of the first task
		// restarted (a region's tasks share theirs; with several regions
		// at once, the others' reports are not timed).
		jm.cfg.Status.restoring(rp.md.ID, jm.execs[tasks[0]].attempt+1, jm.cfg.Now())
		jm.log.Info("restoring", "checkpoint", rp.md.ID, "path", rp.path, "attempt", jm.handler.Restarts(), "regions", regions)
	} else {
		jm.log.Info("restarting without state", "attempt", jm.handler.Restarts(), "regions", regions)
	}
	for _, t := range tasks {
		e := jm.execs[t]
		if e.state == ExecFinished {
			jm.finished-- // a global failure restarts finished tasks too
		}
		e.attempt++
		delete(jm.eod, t)
	}
	jm.deploy(tasks, rp)
	if !jm.anyRegionFailing() {
		// Every region restarted since the final checkpoint completed;
		// the next final checkpoint is taken together again.
		jm.finalDone = false
	}
	if len(jm.stops) > 0 {
		// A stop was asked for before: the restarted sources stop too.
		jm.stopSources(tasks)
	}
}

// restorePointForRestart returns what a restarted region restores: the
// newest checkpoint this run took that verifies, else the job's initial
// point. Never an older run's checkpoint that happens to be newer than a
// --from checkpoint, which would resume a different history.
func (jm *JobMaster) restorePointForRestart(ctx context.Context) (*restorePoint, error) {
	latest, err := jm.latestRestorePoint(ctx)
	if err != nil {
		return nil, err
	}
	initial := jm.initial
	if latest != nil && (initial == nil || latest.md.ID >= jm.firstOwn || latest.md.ID == initial.md.ID && latest.fs == initial.fs) {
		return latest, nil
	}
	return initial, nil
}

// discardIncomplete removes the folders of checkpoints that were
// triggered and neither completed nor are still in keep.
func (jm *JobMaster) discardIncomplete(keep []checkpoint.ID) {
	for id := range jm.triggered {
		if jm.completed[id] || slices.Contains(keep, id) {
			continue
		}
		if err := jm.store.Discard(id); err != nil {
			jm.log.Error("discard incomplete checkpoint", "id", id, "err", err)
		}
	}
}

// deploy starts new executions of tasks (current attempts) from rp, one
// Deployment per TaskManager.
func (jm *JobMaster) deploy(tasks []checkpoint.TaskID, rp *restorePoint) {
	if jm.slots != nil {
		jm.deployOnSlots(tasks, rp)
		return
	}
	jm.deployTo(tasks, rp, func(t checkpoint.TaskID) string { return dataAddressOf(jm.place(t)) })
}

// deployTo starts new executions of tasks from rp on the TaskManagers
// jm.place names; addr gives each task's TaskManager's data address.
func (jm *JobMaster) deployTo(tasks []checkpoint.TaskID, rp *restorePoint, addr func(checkpoint.TaskID) string) {
	var ref *RestoreRef
	if rp != nil {
		ref = &RestoreRef{ID: rp.md.ID}
		if rp.fs != jm.store {
			ref.Path = rp.path
		}
	}
	exec := func(t checkpoint.TaskID) ExecutionID {
		return ExecutionID{Task: t, Attempt: jm.execs[t].attempt}
	}
	place := func(t checkpoint.TaskID) (ResourceID, string, int) {
		return jm.place(t).ID(), addr(t), t.Subtask
	}
	byTM := map[TaskManagerGateway]*Deployment{}
	var order []TaskManagerGateway
	for _, td := range describeTasks(jm.jg, tasks, exec, place) {
		tm := jm.place(td.Exec.Task)
		e := jm.execs[td.Exec.Task]
		e.state, e.tm = ExecDeploying, tm
		jm.live++
		d := byTM[tm]
		if d == nil {
			d = &Deployment{Job: jm.spec.Name, Restore: ref}
			byTM[tm] = d
			order = append(order, tm)
		}
		d.Tasks = append(d.Tasks, td)
	}
	for _, tm := range order {
		tm.Deploy(*byTM[tm])
	}
}

// stopSources tells the source executions among tasks (all if nil) to end
// their input now.
func (jm *JobMaster) stopSources(tasks []checkpoint.TaskID) {
	byTM := map[TaskManagerGateway][]ExecutionID{}
	var order []TaskManagerGateway
	for _, t := range jm.sources {
		if tasks != nil && !slices.Contains(tasks, t) {
			continue
		}
		e := jm.execs[t]
		if e.tm == nil || e.state.Terminal() {
			continue
		}
		if _, ok := byTM[e.tm]; !ok {
			order = append(order, e.tm)
		}
		byTM[e.tm] = append(byTM[e.tm], ExecutionID{Task: t, Attempt: e.attempt})
	}
	for _, tm := range order {
		tm.StopSources(jm.spec.Name, byTM[tm])
	}
}

// answerStops replies to every stop request: with its final checkpoint's
// result if the job finished, else with failure.
func (jm *JobMaster) answerStops(failure error) {
	for _, st := range jm.stops {
		switch {
		case failure != nil:
			st.req.reply <- triggerReply{err: fmt.Errorf("the job failed while stopping: %w", failure)}
		case st.done:
			st.req.reply <- st.result
		default:
			st.req.reply <- triggerReply{err: errors.New("the job ended without a final checkpoint")}
		}
	}
	jm.stops = nil
}

// initialRestorePoint returns where the job starts: the --from checkpoint,
// else the newest retained one; nil for a fresh start. It also returns the
// id after the newest completed checkpoint in storage.
//
// A job recovered from a previous JobManager's run (cfg.resumeFrom > 0)
// restores the newest checkpoint of that run that verifies instead of its
// --from point, which would replay what the sinks committed since. Only
// a checkpoint at least resumeFrom is that run's: an older one in the
// job's folder (an earlier run under its name, kept because --from was
// given) is another history, so when none of the run's own verifies,
// --from it is.
func (jm *JobMaster) initialRestorePoint(ctx context.Context) (*restorePoint, checkpoint.ID, error) {
	next := checkpoint.ID(1)
	if ids, err := jm.store.Completed(); err == nil && len(ids) > 0 {
		next = ids[len(ids)-1] + 1
	}
	if jm.cfg.FromPath != "" && jm.cfg.resumeFrom > 0 && next > jm.cfg.resumeFrom {
		rp, err := jm.latestRestorePoint(ctx)
		if err != nil {
			return nil, 0, err
		}
		if rp != nil && rp.md.ID >= jm.cfg.resumeFrom {
			return rp, next, nil
		}
	}
	if jm.cfg.FromPath != "" {
		md, fs, err := jm.loadFrom(ctx, jm.cfg.FromPath)
		if err != nil {
			return nil, 0, fmt.Errorf("restore from %s: %w", jm.cfg.FromPath, err)
		}
		return &restorePoint{md: md, fs: fs, path: jm.cfg.FromPath}, next, nil
	}
	rp, err := jm.latestRestorePoint(ctx)
	return rp, next, err
}

// latestRestorePoint returns the newest retained checkpoint that verifies,
// reporting every newer one it had to skip; nil if there is none.
func (jm *JobMaster) latestRestorePoint(ctx context.Context) (*restorePoint, error) {
	md, skipped, err := jm.store.LoadLatest(ctx)
	for _, s := range skipped {
		jm.log.Error("skipping unusable checkpoint", "problem", s)
	}
	if errors.Is(err, storage.ErrNoCheckpoint) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	return &restorePoint{md: md, fs: jm.store, path: jm.checkpointLocation(md.ID), own: true}, nil
}
