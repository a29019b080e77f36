package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/jobmaster"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/vfs"
)

// JobMaster runs one job: it is the driver of a jobmaster.Machine, which
// holds every rule of the job (executions, checkpoints, failover, stop and
// savepoints, restore choice). The driver owns the IO: it turns TaskManager
// reports, timers and requests into events, performs the Machine's actions
// through TaskManagerGateways, and hands storage actions to a worker whose
// results come back through the inbox, so the loop never waits for
// storage. One goroutine (run) owns the Machine.
type JobMaster struct {
	cfg   JobConfig
	jg    *dataflow.JobGraph
	store *storage.FS
	log   *slog.Logger
	spec  deployment.JobSpec
	in    *inbox
	m     *jobmaster.Machine
	// status records the job's status (cfg.Status).
	status *jobstatus.Recorder
	// place maps the Machine's TaskManagers to gateways and places
	// logical slots (local or cluster, jobmaster_placement.go).
	place gatewayPlacement
	// desc is Describe(jg), sent to TaskManagers with PrepareJob.
	desc string

	// Cluster mode: the first attempt's number, the slot timeout and
	// checkpoint-id reservation (nil: none) with its persisted bound.
	firstAttempt int
	slotTimeout  time.Duration
	reserveIDs   func(upTo checkpoint.ID) error
	reserved     checkpoint.ID

	// initial is the restore point of the job's start; firstOwn the
	// first checkpoint id this run takes.
	initial  *restorePoint
	firstOwn checkpoint.ID
	// weak is a WEAKLY_CONSISTENT job's start: each task's newest
	// snapshot (RecoveryMode.InitialRestore). Its Older map is the
	// loop's: a restored snapshot's Discard takes its task's older ones
	// along.
	weak TaskRestores

	worker   *storeWorker
	requests map[jobmaster.RequestID]triggerRequest
	// probes guards loopEnded against a stop request whose target probe
	// finished after the loop (see request).
	probes      sync.Mutex
	loopEnded   bool
	nextReq     jobmaster.RequestID
	triggeredAt map[checkpoint.ID]time.Time
	lastState   jobmaster.JobState
	result      error
	// shared reference-counts the files of incremental checkpoints
	// (shared.go); the storage worker owns it once the loop runs.
	shared sharedFiles
	// With a registry (registry.go), owned by the storage worker once the
	// loop runs: the checkpoints this run tried to register, and the
	// unregistered ones a restore skipped and said so.
	registerTried    map[checkpoint.ID]bool
	unregisteredSaid map[checkpoint.ID]bool

	// rescaleGraph builds the job's graph at the parallelisms a rescale
	// request asks for (nil: this deployment cannot rescale in place);
	// rescaled is the accepted request's graph while its final checkpoint
	// is taken and once the attempt stopped on it, for the caller of run
	// to deploy.
	rescaleGraph func(jobstatus.Rescale) (*dataflow.Graph, map[string]int, error)
	rescaled     *pendingRescale
	// rescaleCkpt is the checkpoint a rescale waits for (0: none);
	// rescaleCancel is set once it completed and the attempt is being
	// cancelled to redeploy from it.
	rescaleCkpt   checkpoint.ID
	rescaleCancel bool
	// rescaleDone: the attempt ended to be rescaled, and rescaled.graph
	// is what the caller of run deploys next.
	rescaleDone bool
	// rescaleReported: the pause of cfg.Rescaling was reported.
	rescaleReported bool
}

// pendingRescale is an accepted rescale: the graph at its parallelisms,
// and those by vertex name. The attempt is cancelled once a new
// checkpoint completed; req waits for it.
type pendingRescale struct {
	graph *dataflow.Graph
	par   map[string]int
	req   *triggerRequest
	at    time.Time     // the request, for the pause
	ckpt  checkpoint.ID // the checkpoint the job redeploys from
}

// errRescaling cancels an attempt whose rescale checkpoint completed.
var errRescaling = errors.New("rescaling: redeploying at the new parallelism")

// rescaleOn answers the rescale waiting for checkpoint id (or a newer
// one, which subsumes it) and cancels the attempt: the caller of run
// deploys the job again from that checkpoint.
func (jm *JobMaster) rescaleOn(id checkpoint.ID) {
	r := jm.rescaled
	r.ckpt = id
	jm.rescaleCkpt, jm.rescaleCancel = 0, true
	r.req.reply <- triggerReply{id: id, rescaled: jobstatus.RescaleResult{Checkpoint: id, Parallelism: r.par}}
	r.req = nil
	jm.log.Info("rescaling: cancelling the attempt to redeploy from checkpoint", "id", id, "parallelism", r.par)
	jm.in.put(jmEvent{ev: jobmaster.Cancel{Err: errRescaling}})
}

// rescaleFailed answers the rescale waiting for a checkpoint with err;
// the job goes on at its parallelism.
func (jm *JobMaster) rescaleFailed(err error) {
	if r := jm.rescaled; r != nil && r.req != nil {
		r.req.reply <- triggerReply{err: err}
	}
	jm.rescaled, jm.rescaleCkpt = nil, 0
}

// newJobMaster returns the JobMaster of jg; start completes it once the
// initial restore point is known.
func newJobMaster(cfg JobConfig, jg *dataflow.JobGraph, store *storage.FS) *JobMaster {
	return &JobMaster{
		cfg: cfg, jg: jg, store: store, log: cfg.Logger, status: cfg.recorder(),
		spec:        deployment.JobSpec{Name: cfg.JobName, Kind: "local"},
		in:          newInbox(),
		requests:    map[jobmaster.RequestID]triggerRequest{},
		triggeredAt: map[checkpoint.ID]time.Time{},

		registerTried:    map[checkpoint.ID]bool{},
		unregisteredSaid: map[checkpoint.ID]bool{},
	}
}

// start sets the job's initial restore point (nil: a fresh start) and the
// first checkpoint id this run takes: after next-1, the newest completed
// checkpoint in storage, and after the initial point. Those ids are this
// run's own: after a failure a region restores the newest of them, or
// else the initial point.
func (jm *JobMaster) start(initial *restorePoint, next checkpoint.ID) {
	jm.initial = initial
	jm.firstOwn = next
	if initial != nil {
		jm.firstOwn = max(next, initial.md.ID+1)
	}
}

// newMachine builds the job's Machine from what Execute or NewClusterJob
// set up.
func (jm *JobMaster) newMachine() *jobmaster.Machine {
	var all, sources []checkpoint.TaskID
	for _, v := range jm.jg.Vertices {
		for s := range v.Parallelism {
			t := checkpoint.TaskID{Vertex: v.ID, Subtask: s}
			all = append(all, t)
			if v.IsSource() {
				sources = append(sources, t)
			}
		}
	}
	var initial *jobmaster.RestorePoint
	if rp := jm.initial; rp != nil {
		initial = &jobmaster.RestorePoint{ID: rp.md.ID, Own: rp.own, Path: rp.path}
	}
	firstAttempt := jm.firstAttempt
	if len(jm.weak.Latest) > 0 {
		// The restored tasks are later attempts of the earlier run's,
		// whose process went with their output logs and determinants:
		// each rebuilds its logs as after a lost TaskManager (internal/runtime/weakrt),
		// and counts as one failure and one restart.
		firstAttempt = max(firstAttempt, 1)
	}
	return jobmaster.New(jobmaster.Config{
		Name:         jm.spec.Name,
		Regions:      Regions(jm.jg),
		Tasks:        all,
		Sources:      sources,
		Checkpoint:   jm.cfg.Checkpoint,
		Restart:      jm.cfg.Restart,
		Placement:    jm.place,
		TaskManagers: jm.place.initial(),
		SlotTimeout:  jm.slotTimeout,
		FirstAttempt: firstAttempt,
		Initial:      initial,
		FirstOwn:     jm.firstOwn,
		WeakLatest:   jm.weak.Latest,
		Reserve:      jm.reserveIDs != nil,
		Reserved:     jm.reserved,
		Register:     jm.cfg.registry != nil,
		Weak:         jm.cfg.Weak,
		Logger:       jm.log,
	}, jm.cfg.Now())
}

// run prepares the job on its TaskManagers, deploys it, and drives it
// until the Machine ends it: it finished, failed for good or ctx ended.
// The Machine cancels whatever still runs and waits until every execution
// and metadata write ended before it does.
func (jm *JobMaster) run(ctx context.Context) error {
	var vertices []jobstatus.VertexInfo
	n := 0
	for _, v := range jm.jg.Vertices {
		vertices = append(vertices, jobstatus.VertexInfo{ID: v.ID, Name: v.Name(), Parallelism: v.Parallelism})
		n += v.Parallelism
	}
	jm.status.SetVertices(vertices, n)
	jm.desc = Describe(jm.jg)
	jm.m = jm.newMachine()
	jm.worker = startStoreWorker()
	defer jm.worker.stop()
	jm.step(jobmaster.Start{})
	requests := jm.cfg.Control.requests
	done := ctx.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var evs []jmEvent
	for !jm.m.Ended() {
		wait := time.Hour
		if at, ok := jm.m.NextDeadline(); ok {
			wait = max(at.Sub(jm.cfg.Now()), 0)
		}
		timer.Reset(wait)
		select {
		case <-jm.in.ready:
			evs = jm.in.take(evs[:0])
			for _, ev := range evs {
				jm.receive(ev)
			}
		case <-timer.C:
			jm.step(jobmaster.Tick{})
		case req := <-requests:
			jm.request(req)
		case <-done:
			done = nil
			jm.step(jobmaster.Cancel{Err: ctx.Err()})
		}
	}
	jm.probes.Lock()
	jm.loopEnded = true
	jm.probes.Unlock()
	for _, ev := range jm.in.take(nil) {
		if ev.req != nil {
			ev.req.reply <- triggerReply{err: jobstatus.ErrNotRunning}
		}
	}
	return jm.result
}

// receive steps one event from the inbox.
func (jm *JobMaster) receive(ev jmEvent) {
	switch {
	case ev.lost != nil:
		tm, ok := jm.place.tmOf(ev.lost)
		if !ok {
			return // never deployed there
		}
		cause := ev.reason
		if !containsID(cause, ev.lost.ID()) {
			cause = fmt.Sprintf("TaskManager %s lost: %s", ev.lost.ID(), ev.reason)
		}
		jm.step(jobmaster.TaskManagerLost{TM: tm, Cause: cause})
	case ev.req != nil:
		jm.submit(*ev.req)
	default:
		if a, ok := ev.ev.(jobmaster.Ack); ok && jm.m.Current(a.Exec) {
			jm.status.CheckpointAcknowledged(a.ID, a.State, jm.cfg.Now())
		}
		jm.step(ev.ev)
	}
}

// request takes a request from outside the job (REST, CLI). A stop with a
// savepoint target is refused before it stops anything if the target is
// not writable: the probe runs off the loop and the request comes back
// through the inbox.
func (jm *JobMaster) request(req triggerRequest) {
	if req.kind == reqRescale {
		jm.requestRescale(req)
		return
	}
	if req.kind == reqStop && req.target != "" {
		go func() {
			if err := checkWritable(req.target); err != nil {
				req.reply <- triggerReply{err: fmt.Errorf("savepoint target %s: %w", req.target, err)}
				return
			}
			jm.probes.Lock()
			defer jm.probes.Unlock()
			if jm.loopEnded {
				req.reply <- triggerReply{err: jobstatus.ErrNotRunning}
				return
			}
			jm.in.put(jmEvent{req: &req})
		}()
		return
	}
	jm.submit(req)
}

// requestRescale accepts a rescale whose parallelisms make a valid job
// graph, and stops the attempt for it; or answers why not.
func (jm *JobMaster) requestRescale(req triggerRequest) {
	var err error
	switch {
	case jm.rescaleGraph == nil:
		err = errors.New("rescale: this job cannot be rescaled in place where it runs; stop it with a savepoint and submit it again at the new parallelism with --from")
	case jm.rescaled != nil:
		err = errors.New("rescale: a rescale of this job is already in progress; wait until it runs again")
	case jm.cfg.Weak:
		err = errors.New("rescale: execution.checkpointing.mode WEAKLY_CONSISTENT has no consistent cut of every task to redeploy from; use EXACTLY_ONCE")
	default:
		var g *dataflow.Graph
		var par map[string]int
		if g, par, err = jm.rescaleGraph(req.rescale); err == nil {
			// The job redeploys from a new checkpoint (incremental with
			// lsm, so it writes only what changed) and replays what came
			// after it. An unaligned one may hold records in flight as
			// channel state; the restore redistributes them to the new
			// subtasks (restore_channels.go), so a backpressured job
			// rescales without waiting for its queues to drain.
			jm.rescaled = &pendingRescale{graph: g, par: par, at: jm.cfg.Now()}
			jm.log.Info("rescaling: taking a checkpoint to redeploy from", "parallelism", par)
			jm.submit(req)
			return
		}
	}
	req.reply <- triggerReply{err: err}
}

// submit names a request and steps it.
func (jm *JobMaster) submit(req triggerRequest) {
	jm.nextReq++
	id := jm.nextReq
	jm.requests[id] = req
	kind := jobmaster.RequestCheckpoint
	switch req.kind {
	case reqSavepoint:
		kind = jobmaster.RequestSavepoint
	case reqStop:
		kind = jobmaster.RequestStop
	case reqRescale:
		// A rescale takes a checkpoint (kind stays RequestCheckpoint);
		// once it completed the attempt is cancelled and the caller of
		// run deploys the job again.
	}
	jm.step(jobmaster.Request{Req: id, Kind: kind, Target: req.target})
}

// step applies one event and performs the actions.
func (jm *JobMaster) step(ev jobmaster.Event) {
	if jm.log.Enabled(context.Background(), slog.LevelDebug) {
		jm.logEvent(ev)
	}
	if sc, ok := ev.(jobmaster.StateChanged); ok && sc.State == deployment.ExecFailed && errors.Is(sc.Err, dataflow.ErrTransactionLost) {
		// Data loss: the sink logged what it lost; the metric alerts.
		jm.status.LostTransactions.Add(1)
	}
	for _, act := range jm.m.Step(jm.cfg.Now(), ev) {
		jm.perform(act)
	}
	st := jm.status
	st.Restarts.Store(int64(jm.m.Restarts()))
	if jm.cfg.Rescaling != nil && !jm.rescaleReported {
		jm.reportRescaled()
	}
	if s := jm.m.State(); s != jm.lastState && !s.Terminal() {
		jm.lastState = s
		st.SetState(jobstatus.JobState(s.String()), jm.cfg.Now())
	}
}

// logEvent logs an event at debug level, an execution's report with its
// execution as exec=V/S#A.
func (jm *JobMaster) logEvent(ev jobmaster.Event) {
	switch e := ev.(type) {
	case jobmaster.StateChanged:
		jm.log.Debug("jobmaster event", "kind", "state", "exec", e.Exec.String(), "state", e.State, "err", e.Err)
		return
	case jobmaster.Ack:
		jm.log.Debug("jobmaster event", "kind", "ack", "exec", e.Exec.String(), "id", e.ID)
		return
	case jobmaster.Decline:
		jm.log.Debug("jobmaster event", "kind", "decline", "exec", e.Exec.String(), "id", e.ID, "reason", e.Reason)
		return
	case jobmaster.EndOfData:
		jm.log.Debug("jobmaster event", "kind", "end-of-data", "exec", e.Exec.String())
		return
	}
	jm.log.Debug("jobmaster event", "kind", fmt.Sprintf("%T", ev), "event", ev)
}

// containsID reports whether a loss reason names the TaskManager already.
func containsID(reason string, id deployment.ResourceID) bool {
	return strings.Contains(reason, string(id))
}

// checkWritable creates dir if needed and checks it writable.
func checkWritable(dir string) error { return vfs.CheckWritableDir(dir) }

// initialRestorePoint returns where the job starts: the --from checkpoint,
// else the newest retained one; nil for a fresh start. A WEAKLY_CONSISTENT
// job has no such point: it gathers each task's own (jm.weak). It also returns the
// id after the newest completed checkpoint in storage. It runs before the
// loop, so it reads storage directly.
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
	if jm.cfg.Weak {
		// Each completed snapshot of a WEAKLY_CONSISTENT job is one
		// task's: no single one restores the job, and there is no
		// consistent cut of every task to start a job from.
		if jm.cfg.FromPath != "" {
			return nil, 0, Unrecoverable(fmt.Errorf("--from %s: execution.checkpointing.mode WEAKLY_CONSISTENT never takes a consistent cut of every task, so no checkpoint or savepoint restores the whole job; run it without --from (it resumes each task's newest snapshot in its state folder), or use EXACTLY_ONCE", jm.cfg.FromPath))
		}
		g, err := jm.initialTaskRestores(ctx, jm.cfg.Recovery)
		if err != nil {
			return nil, 0, err
		}
		jm.weak = g
		if n := len(g.Latest); n > 0 {
			jm.log.Info("restoring each task from its own newest snapshot", "tasks", n, "newest_snapshot", next-1)
		}
		return nil, next, nil
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
// reporting every newer one it had to skip; nil if there is none. With a
// registry, only registered checkpoints count: a newer metadata nobody
// registered (a JobManager lost leadership or crashed before registering
// it) is never restored.
func (jm *JobMaster) latestRestorePoint(ctx context.Context) (*restorePoint, error) {
	load := jm.store.LoadLatest
	if jm.cfg.registry != nil {
		load = jm.loadLatestRegistered
	}
	md, skipped, err := load(ctx)
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
