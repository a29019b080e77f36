package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/coordinator"
)

type eventKind uint8

const (
	evAck eventKind = iota
	evDecline
	evEndOfData
	evTaskDone
	evPersisted
)

// event is a message to the JobManager loop from a task, an asynchronous
// snapshot or a metadata writer.
type event struct {
	kind   eventKind
	task   checkpoint.TaskID
	id     checkpoint.ID
	state  checkpoint.TaskState
	reason string
	err    error
}

// localGateway is the JobGateway of local mode: a channel into the loop.
// Sends give up once the attempt ended (done), so a late acknowledgement
// from a cancelled task never blocks.
type localGateway struct {
	events chan<- event
	done   <-chan struct{}
}

func (g *localGateway) send(e event) {
	select {
	case g.events <- e:
	case <-g.done:
	}
}

func (g *localGateway) Acknowledge(task checkpoint.TaskID, id checkpoint.ID, st checkpoint.TaskState) {
	g.send(event{kind: evAck, task: task, id: id, state: st})
}

func (g *localGateway) Decline(task checkpoint.TaskID, id checkpoint.ID, reason string) {
	g.send(event{kind: evDecline, task: task, id: id, reason: reason})
}

func (g *localGateway) EndOfData(task checkpoint.TaskID) {
	g.send(event{kind: evEndOfData, task: task})
}

// attempt is the state of one execution of the job graph.
type attempt struct {
	jm         *jobManager
	dep        *deployment
	byID       map[checkpoint.TaskID]*Task
	coord      *coordinator.Coordinator
	events     chan event
	persisting int // metadata writes in flight
	savepoints map[checkpoint.ID][]triggerRequest
	queued     []triggerRequest // waiting for a free checkpoint slot
	draining   bool
	triggered  map[checkpoint.ID]time.Time
	completed  map[checkpoint.ID]bool
	eod        map[checkpoint.TaskID]bool
	failure    error
}

// runAttempt deploys the tasks, coordinates checkpoints until the job
// finishes or something fails, and tears everything down before returning:
// tasks stopped, metadata writers done, aborted checkpoints discarded.
func (jm *jobManager) runAttempt(ctx context.Context, n int, rp *restorePoint) error {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	jm.cfg.Faults.Release()
	events := make(chan event, 256)
	gw := &localGateway{events: events, done: actx.Done()}
	dep, err := jm.deploy(actx, n, rp, gw)
	if err != nil {
		return err
	}
	a := &attempt{
		jm: jm, dep: dep, events: events,
		byID:       map[checkpoint.TaskID]*Task{},
		coord:      coordinator.New(jm.cfg.Checkpoint, dep.all, dep.sources, jm.nextID, jm.cfg.Now()),
		triggered:  map[checkpoint.ID]time.Time{},
		completed:  map[checkpoint.ID]bool{},
		savepoints: map[checkpoint.ID][]triggerRequest{},
		eod:        map[checkpoint.TaskID]bool{},
	}
	var tasksWG sync.WaitGroup
	for _, t := range dep.tasks {
		a.byID[t.ID] = t
		tasksWG.Add(1)
		go func() {
			defer tasksWG.Done()
			err := t.Run(actx)
			events <- event{kind: evTaskDone, task: t.ID, err: err} // always drained
		}()
	}
	st := jm.cfg.Status
	var vertices []VertexInfo
	for _, v := range jm.jg.Vertices {
		vertices = append(vertices, VertexInfo{ID: v.ID, Name: v.Name(), Parallelism: v.Parallelism})
	}
	if len(jm.stops) > 0 {
		// A stop was asked for in an earlier attempt: this one stops too.
		a.stopSources()
	}
	st.setAttempt(dep.tasks, vertices)
	st.setState(StateRunning, jm.cfg.Now())
	defer st.setAttempt(nil, nil)
	requests := st.mon().requests
	running := len(dep.tasks)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for running > 0 && a.failure == nil {
		if at, ok := a.coord.NextDeadline(); ok {
			timer.Reset(max(at.Sub(jm.cfg.Now()), 0))
		} else {
			timer.Reset(time.Hour)
		}
		select {
		case ev := <-events:
			if ev.kind == evTaskDone {
				running--
				if ev.err != nil {
					a.failure = ev.err
					break
				}
			}
			a.handle(ev)
		case <-timer.C:
			a.perform(a.coord.Step(coordinator.Tick{Now: jm.cfg.Now()}))
		case req := <-requests:
			a.serve(req)
		case <-ctx.Done():
			a.failure = ctx.Err()
		}
	}
	// Tear down. Keep consuming events until every task and metadata writer
	// stopped: a metadata write that succeeded completes its checkpoint even
	// now, because the file exists and a restore will use it.
	a.draining = true
	cancel()
	for running > 0 || a.persisting > 0 {
		ev := <-events
		if ev.kind == evTaskDone {
			running--
			if ev.err != nil && a.failure == nil && !errors.Is(ev.err, context.Canceled) {
				a.failure = ev.err
			}
			continue
		}
		a.handle(ev)
	}
	tasksWG.Wait()
	if a.failure != nil {
		a.perform(a.coord.Step(coordinator.Reset{Reason: a.failure.Error()}))
	}
	// No task writes any more: remove what checkpoints that never completed
	// left behind (an abort's Discard can race with a late asynchronous
	// write that recreates the folder).
	for id := range a.triggered {
		if !a.completed[id] {
			if err := jm.store.Discard(id); err != nil {
				jm.log.Error("discard incomplete checkpoint", "id", id, "err", err)
			}
		}
	}
	jm.sweepShared()
	jm.nextID = max(jm.nextID, a.maxTriggered()+1)
	reason := a.failure
	if reason == nil {
		reason = errors.New("the job finished")
	}
	a.failRequests(reason)
	return a.failure
}

// serve handles a request from outside the job (REST, CLI). A checkpoint
// request is answered at once with the id; a savepoint request once its
// checkpoint completed and was copied; a stop request once the final
// checkpoint completed (and was copied, with a target).
func (a *attempt) serve(req triggerRequest) {
	if req.kind == reqStop {
		if req.target != "" {
			// Refuse before stopping anything: a stop whose savepoint
			// cannot be written must not end the job.
			if err := checkWritable(req.target); err != nil {
				req.reply <- triggerReply{err: fmt.Errorf("savepoint target %s: %w", req.target, err)}
				return
			}
		}
		// The stop belongs to the job, not to this attempt: an attempt
		// that fails after it is restarted and stops again (see
		// runAttempt), and the caller hears back only once the job ended.
		a.jm.stops = append(a.jm.stops, pendingStop{req: req})
		a.stopSources()
		return
	}
	if len(a.coord.Pending()) >= a.maxConcurrent() {
		// As Flink, a request waits for a checkpoint to finish rather than
		// being refused because periodic checkpoints are in progress.
		a.queued = append(a.queued, req)
		return
	}
	acts := a.coord.Step(coordinator.TriggerRequest{Now: a.jm.cfg.Now(), Kind: checkpointKindOf(req)})
	var r triggerReply
	for _, act := range acts {
		switch act := act.(type) {
		case coordinator.Trigger:
			r.id = act.ID
		case coordinator.Rejected:
			r.err = fmt.Errorf("checkpoint not triggered: %s", act.Reason)
		}
	}
	if req.kind == reqSavepoint && r.err == nil {
		a.savepoints[r.id] = append(a.savepoints[r.id], req)
	} else {
		req.reply <- r
	}
	a.perform(acts)
}

// maxConcurrent is the coordinator's effective limit on pending
// checkpoints.
func (a *attempt) maxConcurrent() int {
	c := a.jm.cfg.Checkpoint
	if c.MinPause > 0 || c.MaxConcurrent < 1 {
		return 1
	}
	return c.MaxConcurrent
}

// checkpointDone answers the savepoint and stop requests waiting for
// checkpoint id (err != nil: it failed), then serves the requests queued
// behind the concurrency limit. It runs before retention, so the checkpoint
// is still there to copy.
func (a *attempt) checkpointDone(id checkpoint.ID, kind checkpoint.Kind, err error) {
	defer func() {
		if a.draining {
			return
		}
		queued := a.queued
		a.queued = nil
		for _, req := range queued {
			a.serve(req)
		}
	}()
	waiting := a.savepoints[id]
	delete(a.savepoints, id)
	if errors.Is(err, errSubsumed) {
		// A newer checkpoint completed first: take another one for these
		// requests (a savepoint must be a checkpoint taken after it was
		// asked for; the next one is).
		a.queued = append(a.queued, waiting...)
		return
	}
	if kind == checkpoint.Final && err == nil {
		// Copy now, while the final checkpoint is surely retained; answer
		// when the job has ended (runAttempt), so "stopped" is true.
		for i := range a.jm.stops {
			st := &a.jm.stops[i]
			st.result = triggerReply{id: id}
			if st.req.target != "" {
				st.result.path, st.result.err = a.jm.savepoint(context.Background(), id, st.req.target)
				if st.result.err != nil {
					st.result.err = fmt.Errorf("%w (the final checkpoint %s is retained)", st.result.err, a.jm.checkpointLocation(id))
				}
			}
			st.done = true
		}
	}
	for _, req := range waiting {
		r := triggerReply{id: id, err: err}
		if err == nil && req.target != "" {
			r.path, r.err = a.jm.savepoint(context.Background(), id, req.target)
			if r.err == nil {
				a.jm.log.Info("savepoint written", "checkpoint", id, "path", r.path)
			}
		}
		req.reply <- r
	}
}

// failRequests answers every request still waiting when the attempt ends.
func (a *attempt) failRequests(err error) {
	for id, reqs := range a.savepoints {
		for _, req := range reqs {
			req.reply <- triggerReply{id: id, err: fmt.Errorf("checkpoint %d did not complete: %w", id, err)}
		}
	}
	a.savepoints = nil
	for _, req := range a.queued {
		req.reply <- triggerReply{err: fmt.Errorf("no checkpoint could be triggered: %w", err)}
	}
	a.queued = nil
}

// stopSources tells every source task to end its input now.
func (a *attempt) stopSources() {
	for _, id := range a.dep.sources {
		a.byID[id].mail.put(mail{kind: mailStop})
	}
}

// pendingStop is a stop request of the job and, once a final checkpoint
// completed, its answer.
type pendingStop struct {
	req    triggerRequest
	result triggerReply
	done   bool
}

// errSubsumed marks a checkpoint aborted because a newer one completed.
var errSubsumed = errors.New("subsumed")

// checkWritable creates dir if needed and proves it writable.
func checkWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".weir-probe-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

func (a *attempt) maxTriggered() checkpoint.ID {
	var m checkpoint.ID
	for id := range a.triggered {
		m = max(m, id)
	}
	return m
}

func (a *attempt) handle(ev event) {
	now := a.jm.cfg.Now()
	a.jm.log.Debug("jobmanager event", "kind", ev.kind, "task", ev.task, "id", ev.id, "reason", ev.reason, "err", ev.err)
	switch ev.kind {
	case evAck:
		a.jm.cfg.Status.updateCheckpoint(ev.id, func(c *CheckpointStats) { c.acknowledged(ev.state, now) })
		a.perform(a.coord.Step(coordinator.Ack{Task: ev.task, ID: ev.id, State: ev.state}))
	case evDecline:
		a.perform(a.coord.Step(coordinator.Decline{Task: ev.task, ID: ev.id, Reason: ev.reason}))
	case evPersisted:
		a.persisting--
		a.perform(a.coord.Step(coordinator.Persisted{ID: ev.id, Err: ev.err, Now: now}))
	case evEndOfData:
		if a.eod[ev.task] || a.draining {
			return
		}
		a.eod[ev.task] = true
		if len(a.eod) == len(a.dep.tasks) {
			a.perform(a.coord.Step(coordinator.EndOfInput{Now: now}))
		}
	}
}

// perform carries out the coordinator's actions.
func (a *attempt) perform(actions []coordinator.Action) {
	jm := a.jm
	st := jm.cfg.Status
	for _, act := range actions {
		switch act := act.(type) {
		case coordinator.Trigger:
			jm.log.Info("checkpoint triggered", "id", act.ID, "kind", act.Kind)
			a.triggered[act.ID] = act.Timestamp
			st.checkpointTriggered(act.ID, act.Kind, act.Timestamp)
			if a.draining {
				continue
			}
			b := checkpoint.Barrier{ID: act.ID, Timestamp: act.Timestamp, Kind: act.Kind}
			for _, id := range a.dep.sources {
				a.byID[id].mail.put(mail{kind: mailTrigger, barrier: b})
			}
		case coordinator.Persist:
			if a.draining {
				// Not started: the Reset that follows aborts it.
				continue
			}
			md := metadataFor(jm.cfg.JobName, jm.jg, act.ID, act.Kind, act.Timestamp, act.States)
			a.sharedPersisting(md)
			size := sizesOf(act.States)
			a.persisting++
			go func() {
				_, err := jm.store.WriteMetadata(context.Background(), md)
				if err == nil {
					st.checkpointPersisted(act.ID, size)
				}
				a.events <- event{kind: evPersisted, id: act.ID, err: err}
			}()
		case coordinator.NotifyComplete:
			a.completed[act.ID] = true
			jm.log.Info("checkpoint completed", "id", act.ID, "kind", act.Kind)
			st.CompletedCheckpoints.Add(1)
			st.LastCheckpointID.Store(int64(act.ID))
			if t0, ok := a.triggered[act.ID]; ok {
				d := jm.cfg.Now().Sub(t0)
				st.LastCheckpointDuration.Store(int64(d))
				st.checkpointCompleted(act.ID, d)
			}
			for _, t := range a.dep.tasks {
				t.mail.put(mail{kind: mailNotifyComplete, id: act.ID})
			}
			a.checkpointDone(act.ID, act.Kind, nil)
			a.retain(act.ID)
		case coordinator.Abort:
			if !act.Subsumed {
				st.FailedCheckpoints.Add(1)
			}
			jm.log.Info("checkpoint aborted", "id", act.ID, "reason", act.Reason)
			if t0, ok := a.triggered[act.ID]; ok {
				d := jm.cfg.Now().Sub(t0)
				st.updateCheckpoint(act.ID, func(c *CheckpointStats) { c.Status, c.Duration, c.FailureReason = CheckpointFailed, d, act.Reason })
			}
			for _, t := range a.dep.tasks {
				t.mail.put(mail{kind: mailNotifyAborted, id: act.ID})
			}
			cause := fmt.Errorf("checkpoint %d aborted: %s", act.ID, act.Reason)
			if act.Subsumed {
				cause = fmt.Errorf("checkpoint %d: %w", act.ID, errSubsumed)
			}
			a.checkpointDone(act.ID, act.Kind, cause)
			if err := jm.store.Discard(act.ID); err != nil {
				jm.log.Error("discard aborted checkpoint", "id", act.ID, "err", err)
			}
			a.sharedAborted(act.ID)
		case coordinator.Failover:
			if a.failure == nil {
				a.failure = fmt.Errorf("checkpointing: %s", act.Reason)
			}
		case coordinator.Rejected:
			jm.log.Info("checkpoint request rejected", "reason", act.Reason)
		}
	}
}
