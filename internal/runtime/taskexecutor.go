package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/network/remote"
)

// PreparedJob is what a TaskExecutor needs to run tasks of a job: its
// graph, its configuration (defaults filled) and its checkpoint storage.
type PreparedJob struct {
	Graph  *dataflow.JobGraph
	Config JobConfig
	Store  *storage.FS
}

// JobResolver prepares a job named by spec on a TaskExecutor: local mode
// hands over the graph Execute built; cluster mode builds the graph from
// the spec with the binary's job registry, checks it against the
// JobMaster's description and opens checkpoint storage.
type JobResolver func(spec deployment.JobSpec, description string) (*PreparedJob, error)

// TaskExecutorConfig configures a TaskExecutor.
type TaskExecutorConfig struct {
	// ID names the TaskManager ("local" in local mode).
	ID deployment.ResourceID
	// DataAddress is where other TaskManagers reach this one's data plane
	// (Network's listener); empty without one.
	DataAddress string
	// Network is the data plane to other TaskManagers: remote channels go
	// through its connections, and its PartitionRegistry answers their
	// consumers' requests. Nil when the executor has no remote peers (local
	// mode with one TaskManager); a deployment that needs a remote channel
	// then fails its task, naming the cause. The creator closes it, after
	// Close.
	Network *remote.ConnManager
	// JobMaster receives every report of the executor's tasks.
	JobMaster deployment.JobMasterGateway
	// CancellationTimeout is how long a cancelled execution may take to
	// end (task.cancellation.timeout; 0: DefaultCancellationTimeout).
	CancellationTimeout time.Duration
	// OnStuck is called once when an execution did not end within
	// CancellationTimeout of its cancellation: goroutines cannot be
	// killed, so a TaskManager exits (its JobManager redeploys the work
	// elsewhere). Nil only logs.
	OnStuck func(error)
	// Resolve prepares a job at PrepareJob.
	Resolve JobResolver
	// Logger (nil: silent).
	Logger *slog.Logger
}

// TaskExecutor runs the tasks a JobMaster deploys on one TaskManager: it
// builds gates, writers and tasks for the TaskDeployments it receives,
// runs each task on its own goroutine and reports state changes, acks,
// declines and end of data through the JobMasterGateway. It implements
// TaskManagerGateway: in local mode the JobMaster calls it directly. Its
// methods only queue work and never block on a task.
type TaskExecutor struct {
	cfg TaskExecutorConfig
	log *slog.Logger

	mu     sync.Mutex
	jobs   map[string]*teJob
	closed bool
	// added is closed, and replaced, whenever a job is added to jobs
	// (preparedJob waits on it).
	added chan struct{}
	// stuckOnce reports the first stuck execution only.
	stuckOnce sync.Once
	// wg counts build and task goroutines: Close waits for all.
	wg sync.WaitGroup
}

// teJob is a prepared job on the TaskExecutor.
type teJob struct {
	name string
	// ready is closed once the job is prepared: prep is set, or prepErr
	// says why not. Deployments wait for it on their own goroutine, so the
	// session's reader never runs a job's builder.
	ready   chan struct{}
	prep    *PreparedJob
	prepErr error
	ctx     context.Context
	cancel  context.CancelFunc
	parts   *partitions
	execs   map[deployment.ExecutionID]*execution // guarded by TaskExecutor.mu

	rpMu  sync.Mutex
	rpRef deployment.RestoreRef
	rp    *restorePoint // the restore point of rpRef, read once

	// rec is the consistency mode's part (executor_recovery.go), set
	// with prep before ready is closed.
	rec JobRecovery
}

// execution is one deployed execution. Its mailbox exists from Deploy on,
// so a trigger or notification sent while the task is being built is
// kept for it.
type execution struct {
	id     deployment.ExecutionID
	ctx    context.Context
	cancel context.CancelFunc
	// runCtx is ctx, also cancelled with the cause when a remote channel
	// fails (failAsync): the task fails even while it waits for credit.
	runCtx context.Context
	fail   context.CancelCauseFunc
	mail   *mailbox
	task   *Task         // set once built; guarded by TaskExecutor.mu
	links  *taskLinks    // set by build; released by end
	done   chan struct{} // closed by end
}

// DefaultCancellationTimeout is task.cancellation.timeout's default.
const DefaultCancellationTimeout = 3 * time.Minute

// watch waits for the execution to be cancelled and then, for at most the
// cancellation timeout, for it to end; an execution that does not is
// reported stuck (OnStuck). It returns once the execution ended.
func (te *TaskExecutor) watch(job string, e *execution) {
	defer te.wg.Done()
	select {
	case <-e.done:
		return
	case <-e.ctx.Done():
	}
	timeout := te.cfg.CancellationTimeout
	if timeout <= 0 {
		timeout = DefaultCancellationTimeout
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-e.done:
		return
	case <-t.C:
	}
	err := fmt.Errorf("TaskManager %s: task %s of job %s did not stop within %s of its cancellation (task.cancellation.timeout): an operator ignores cancellation, e.g. a blocking call without a context or deadline; fix the operator, or raise the timeout if it only stops slowly", te.cfg.ID, e.id, job, timeout)
	te.log.Error("task stuck after cancellation", "exec", e.id.String(), "job", job, "timeout", timeout)
	te.stuckOnce.Do(func() {
		if te.cfg.OnStuck != nil {
			te.cfg.OnStuck(err)
		}
	})
	<-e.done
}

// failAsync fails the execution from another goroutine (a remote
// channel's connection): its task returns the error, from its mailbox
// loop or from a wait for credit, whichever comes first.
func (e *execution) failAsync(err error) {
	e.fail(err)
	e.mail.put(mail{kind: mailAsyncFailed, err: err})
}

// NewTaskExecutor returns a TaskExecutor with no jobs.
func NewTaskExecutor(cfg TaskExecutorConfig) *TaskExecutor {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	te := &TaskExecutor{cfg: cfg, log: log, jobs: map[string]*teJob{}}
	if cfg.Network != nil {
		te.serveRecoveryRequests(cfg.Network.Registry())
	}
	return te
}

// ID names the TaskManager.
func (te *TaskExecutor) ID() deployment.ResourceID { return te.cfg.ID }

// DataAddress is where other TaskManagers reach this one's data plane;
// the JobMaster puts it into the ChannelDescs of its tasks' peers.
func (te *TaskExecutor) DataAddress() string { return te.cfg.DataAddress }

// PrepareJob prepares the job through the resolver and answers
// JobPrepared. Preparing a job that is prepared already only answers.
func (te *TaskExecutor) PrepareJob(spec deployment.JobSpec, description string) {
	te.mu.Lock()
	if te.closed {
		te.mu.Unlock()
		te.cfg.JobMaster.JobPrepared(spec.Name, fmt.Errorf("TaskManager %s is shutting down", te.cfg.ID))
		return
	}
	if j := te.jobs[spec.Name]; j != nil {
		te.mu.Unlock()
		select {
		case <-j.ready:
			te.cfg.JobMaster.JobPrepared(spec.Name, j.prepErr)
		default: // being prepared: that preparation answers
		}
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	j := &teJob{name: spec.Name, ready: make(chan struct{}), ctx: ctx, cancel: cancel, parts: newPartitions(te.cfg.ID), execs: map[deployment.ExecutionID]*execution{}}
	te.jobs[spec.Name] = j
	if te.added != nil {
		close(te.added)
		te.added = nil
	}
	te.wg.Add(1)
	te.mu.Unlock()
	// The job's builder runs here, not on the caller's goroutine: in
	// cluster mode that is the session's reader, which must go on
	// answering heartbeats however long a builder takes.
	go func() {
		defer te.wg.Done()
		prep, err := te.cfg.Resolve(spec, description)
		if err != nil {
			err = fmt.Errorf("TaskManager %s: prepare job %s: %w", te.cfg.ID, spec.Name, err)
		}
		j.prep, j.prepErr = prep, err
		if err == nil {
			j.rec = te.newJobRecovery(prep)
		}
		close(j.ready)
		te.cfg.JobMaster.JobPrepared(spec.Name, err)
	}()
}

// ReleaseJob cancels the job's executions and forgets the job; the
// executions still report their end.
func (te *TaskExecutor) ReleaseJob(job string) {
	te.mu.Lock()
	j := te.jobs[job]
	delete(te.jobs, job)
	te.mu.Unlock()
	if j != nil {
		j.cancel()
	}
}

// Close cancels every execution and waits until all ended.
func (te *TaskExecutor) Close() {
	te.mu.Lock()
	te.closed = true
	for _, j := range te.jobs {
		j.cancel()
	}
	te.jobs = map[string]*teJob{}
	te.mu.Unlock()
	te.wg.Wait()
}

// Deploy builds and starts the deployment's executions on a goroutine of
// their own (restoring state reads files).
func (te *TaskExecutor) Deploy(d deployment.Deployment) {
	te.mu.Lock()
	j := te.jobs[d.Job]
	if j == nil || te.closed {
		te.mu.Unlock()
		err := fmt.Errorf("TaskManager %s has not prepared job %s: PrepareJob must come before Deploy", te.cfg.ID, d.Job)
		for _, td := range d.Tasks {
			te.cfg.JobMaster.TaskStateChanged(d.Job, td.Exec, deployment.ExecFailed, err)
		}
		return
	}
	execs := make([]*execution, len(d.Tasks))
	for i, td := range d.Tasks {
		ctx, cancel := context.WithCancel(j.ctx)
		e := &execution{id: td.Exec, ctx: ctx, cancel: cancel, mail: newMailbox(), done: make(chan struct{})}
		e.runCtx, e.fail = context.WithCancelCause(ctx)
		j.execs[td.Exec] = e
		execs[i] = e
		te.wg.Add(1)
		go te.watch(d.Job, e)
	}
	te.wg.Add(1)
	te.mu.Unlock()
	go func() {
		defer te.wg.Done()
		te.start(j, d, execs)
	}()
}

// start builds the deployment's tasks and runs each on its goroutine. If
// building fails, the execution it failed for reports FAILED and the
// others, never started, CANCELED; a cancelled execution reports
// CANCELED whatever stopped its build.
func (te *TaskExecutor) start(j *teJob, d deployment.Deployment, execs []*execution) {
	ctx, stop := buildContext(j.ctx, execs)
	var (
		tasks  []*Task
		failed int
		err    error
	)
	select {
	case <-j.ready:
		if err = j.prepErr; err == nil {
			tasks, failed, err = te.build(ctx, j, d, execs)
		}
	case <-ctx.Done():
		err = ctx.Err()
	}
	stop()
	if err != nil {
		for i, e := range execs {
			st, cause := deployment.ExecCanceled, error(nil)
			if i == failed && e.ctx.Err() == nil {
				st, cause = deployment.ExecFailed, err
			}
			te.end(j, e, st, cause)
		}
		return
	}
	te.mu.Lock()
	for i, t := range tasks {
		execs[i].task = t
	}
	te.mu.Unlock()
	for i, t := range tasks {
		e := execs[i]
		te.wg.Add(1)
		go func() {
			defer te.wg.Done()
			te.cfg.JobMaster.TaskStateChanged(j.name, e.id, deployment.ExecRunning, nil)
			err := t.Run(e.runCtx)
			switch {
			case err == nil:
				te.end(j, e, deployment.ExecFinished, nil)
			case e.ctx.Err() != nil:
				// Cancelled from outside (Cancel, ReleaseJob, Close):
				// whatever the task returned on the way out.
				te.end(j, e, deployment.ExecCanceled, nil)
			default:
				if e.runCtx.Err() != nil {
					// A remote channel failed while the task waited: the
					// cause says why, the task's error only that it stopped.
					err = context.Cause(e.runCtx)
				}
				te.end(j, e, deployment.ExecFailed, err)
			}
		}()
	}
}

// buildContext returns the context a deployment is built under: parent,
// also cancelled once every execution of the deployment is. A build waits
// for connections (up to the connect timeout, for a peer that may be
// gone) and reads restored state; when the JobMaster cancels the
// executions, its region is restarting and waits for their reports. stop
// releases the context's resources.
func buildContext(parent context.Context, execs []*execution) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	var left atomic.Int32
	left.Store(int32(len(execs)))
	stops := make([]func() bool, len(execs))
	for i, e := range execs {
		stops[i] = context.AfterFunc(e.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, s := range stops {
			s()
		}
		cancel()
	}
}

// end forgets an execution and reports its terminal state.
func (te *TaskExecutor) end(j *teJob, e *execution, st deployment.ExecState, err error) {
	e.cancel()
	j.parts.release(e.id)
	// Before the JobMaster hears of it, so that the mode's recovery of
	// the next attempt never waits behind this one.
	j.preparedRecovery().Ended(e.id, st == deployment.ExecFailed)
	if e.links != nil {
		e.links.release(st == deployment.ExecFinished, j.prep.Config.recorder())
	}
	te.mu.Lock()
	delete(j.execs, e.id)
	te.mu.Unlock()
	if st == deployment.ExecFailed {
		te.log.Warn("task failed", "exec", e.id.String(), "err", err)
	}
	te.cfg.JobMaster.TaskStateChanged(j.name, e.id, st, err)
	close(e.done)
}

// lookup returns the job's executions among execs (all if execs is nil).
func (te *TaskExecutor) lookup(job string, execs []deployment.ExecutionID) []*execution {
	te.mu.Lock()
	defer te.mu.Unlock()
	j := te.jobs[job]
	if j == nil {
		return nil
	}
	var out []*execution
	if execs == nil {
		for _, e := range j.execs {
			out = append(out, e)
		}
	}
	for _, id := range execs {
		if e := j.execs[id]; e != nil {
			out = append(out, e)
		}
	}
	return out
}

// Cancel stops executions; each reports CANCELED once its task returned.
// Executions it does not know (ended already) are skipped.
func (te *TaskExecutor) Cancel(job string, execs []deployment.ExecutionID) {
	for _, e := range te.lookup(job, execs) {
		e.cancel()
	}
}

// Trigger starts checkpoint b at a source execution.
func (te *TaskExecutor) Trigger(job string, exec deployment.ExecutionID, b checkpoint.Barrier) {
	for _, e := range te.lookup(job, []deployment.ExecutionID{exec}) {
		e.mail.put(mail{kind: mailTrigger, barrier: b})
	}
}

// NotifyComplete tells every execution of the job that checkpoint id, of
// kind, completed. Only the completion of a final checkpoint finishes a
// task.
func (te *TaskExecutor) NotifyComplete(job string, id checkpoint.ID, kind checkpoint.Kind) {
	te.notifyComplete(job, mail{kind: mailNotifyComplete, id: id, ckind: kind, ckindKnown: true})
}

// NotifyCompleteOfUnknownKind is NotifyComplete for a JobManager that does
// not say the checkpoint's kind (an older version): a task finishes only
// if id is the final checkpoint it snapshotted (jobmaster.TaskFinal).
func (te *TaskExecutor) NotifyCompleteOfUnknownKind(job string, id checkpoint.ID) {
	te.notifyComplete(job, mail{kind: mailNotifyComplete, id: id})
}

func (te *TaskExecutor) notifyComplete(job string, m mail) {
	for _, e := range te.recipients(job, m.id) {
		e.mail.put(m)
	}
}

// NotifyAborted tells every execution of the job that checkpoint id was
// aborted.
func (te *TaskExecutor) NotifyAborted(job string, id checkpoint.ID) {
	for _, e := range te.recipients(job, id) {
		e.mail.put(mail{kind: mailNotifyAborted, id: id})
	}
}

// StopSources makes source executions end their input.
func (te *TaskExecutor) StopSources(job string, execs []deployment.ExecutionID) {
	for _, e := range te.lookup(job, execs) {
		e.mail.put(mail{kind: mailStop})
	}
}

// Report returns the counters of the job's running tasks, ordered by
// task.
func (te *TaskExecutor) Report(job string) []jobstatus.TaskStats {
	te.mu.Lock()
	var tasks []*Task
	var rec JobRecovery = barrierJobRecovery{}
	if j := te.jobs[job]; j != nil {
		rec = j.preparedRecovery()
		for _, e := range j.execs {
			if e.task != nil {
				tasks = append(tasks, e.task)
			}
		}
	}
	te.mu.Unlock()
	slices.SortFunc(tasks, func(a, b *Task) int { return compareTaskID(a.ID, b.ID) })
	out := make([]jobstatus.TaskStats, 0, len(tasks))
	for _, t := range tasks {
		out = append(out, jobstatus.TaskStats{
			Vertex: t.ID.Vertex, Name: t.Name, Subtask: t.ID.Subtask,
			RecordsIn: t.metrics.RecordsIn.Load(), RecordsOut: t.metrics.RecordsOut.Load(),
			BackPressured:      t.metrics.sampleBackPressure(),
			AlignmentTime:      time.Duration(t.metrics.LastAlignmentNanos.Load()),
			CreditsAvailable:   t.metrics.creditsAvailable(),
			InputWatermark:     t.metrics.InputWatermark.Load(),
			OutputWatermark:    t.metrics.OutputWatermark.Load(),
			LateRecordsDropped: t.metrics.LateRecordsDropped.Load(),
			Time:               t.metrics.busy.times(t.now()),
			Gauges:             t.metrics.Gauges.Snapshot(),
			Async:              asyncStats(&t.metrics.Async),
		})
		rec.AddStats(t.ID, &out[len(out)-1])
	}
	return out
}

// restorePoint returns the restore point ref names, reading its _metadata
// once per job and ref; nil for a fresh start.
func (j *teJob) restorePoint(ctx context.Context, ref *deployment.RestoreRef) (*restorePoint, error) {
	if ref == nil {
		return nil, nil
	}
	j.rpMu.Lock()
	defer j.rpMu.Unlock()
	if j.rp != nil && j.rpRef == *ref {
		return j.rp, nil
	}
	cfg := j.prep.Config
	var (
		md   *checkpoint.Metadata
		fs   *storage.FS
		err  error
		path = ref.Path
	)
	switch {
	case ref.Path == "":
		fs = j.prep.Store
		md, err = fs.ReadMetadata(ctx, ref.ID)
		path = fmt.Sprintf("%s/chk-%d", j.prep.Store.JobDir(), ref.ID)
	case cfg.Locations != nil:
		fsys, p, lerr := cfg.Locations.RestoreSource(ctx, ref.Path)
		if lerr != nil {
			return nil, fmt.Errorf("restore from %s: %w", ref.Path, lerr)
		}
		md, fs, err = storage.ReadMetadata(ctx, p, storage.WithFS(fsys))
	default:
		md, fs, err = storage.ReadMetadata(ctx, ref.Path)
	}
	if err != nil {
		return nil, fmt.Errorf("restore checkpoint %d: %w", ref.ID, err)
	}
	if md.ID != ref.ID {
		return nil, fmt.Errorf("restore checkpoint %d from %s: its metadata is of checkpoint %d", ref.ID, path, md.ID)
	}
	j.rpRef, j.rp = *ref, &restorePoint{md: md, fs: fs, path: path}
	return j.rp, nil
}

// asyncStats reads a task's async I/O counters; nil for a task without
// async operators.
func asyncStats(m *dataflow.AsyncMetrics) *jobstatus.TaskAsyncStats {
	if !m.Used.Load() {
		return nil
	}
	s := &jobstatus.TaskAsyncStats{InFlight: m.InFlight.Load(), Timeouts: m.Timeouts.Load(), Retries: m.Retries.Load()}
	if n := m.Calls.Load(); n > 0 {
		s.LatencyMean = time.Duration(m.LatencyNanos.Load() / n)
	}
	return s
}
