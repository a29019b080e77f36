package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/status"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/watermark"
)

// jobManager is the JobMaster layer of a JobManager process: it builds
// submitted jobs, runs one runtime.ClusterJob each, routes TaskManager
// messages and losses to them, serves the client RPCs and keeps job
// records in the state folder.
type jobManager struct {
	cfg   JobManagerConfig
	log   *slog.Logger
	store jobRecords
	// lead is the leadership this JobManager serves under (nil without
	// high availability): checkpoints are registered through it.
	lead Leadership
	// d is set once the Dispatcher runs (REST may be asked before).
	dmu sync.Mutex
	d   *Dispatcher
	// ctx ends when the JobManager shuts down: jobs stop, but their
	// records stay non-terminal so the next JobManager recovers them.
	ctx context.Context
	wg  sync.WaitGroup

	// ready is closed once the Dispatcher runs and unfinished jobs are
	// recovered: client RPCs wait for it, so a submission never races a
	// recovered job of its name.
	ready chan struct{}

	// onStart, if set, is called for every job started (metrics).
	onStart func(*managedJob)
	// restAddr is the REST API's address, "" without one; set before
	// ready is closed (restaddress.go).
	restAddr string

	mu   sync.Mutex
	jobs map[string]*managedJob
	// submitting are the names of submissions being built: a second
	// submission of such a name is refused (see reserve).
	submitting map[string]bool
	// autoscalers are the running autoscalers of jobs with
	// job.autoscaler.enabled, by job name: each outlives the runs its
	// rescales start, and stops with the job.
	autoscalers map[string]*jobAutoscaler
	// rescaling holds, by job, the in-place rescale its next run carries
	// out (restartRescaled to start).
	rescaling map[string]*runtime.RescaleStart
	// reactives are the reactive-mode drivers of jobs (scheduler-mode:
	// reactive) by name: each outlives the runs its rescales start.
	reactives map[string]*reactiveDriver
	// reactiveJob is the job a submission claimed in reactive mode, which
	// gives every slot to one job (checkReactive).
	reactiveJob string
}

// jobAutoscaler is a job's autoscaler and what stops it.
type jobAutoscaler struct {
	a    *runtime.Autoscaler
	stop context.CancelFunc
}

// managedJob is one job of the JobManager.
type managedJob struct {
	rec    jobRecord
	status *jobstatus.JobStatus
	conf   *config.Config
	cj     *runtime.ClusterJob
	cancel context.CancelFunc
	// control takes the job's commands (REST) to its JobMaster.
	control *runtime.JobControl
	// canceled: a client cancelled the job, so its end is recorded even
	// when the JobManager shuts down meanwhile.
	canceled atomic.Bool
	done     chan struct{} // closed when the job ended; rec is final then
	names    map[int]string
	// unrecovered holds, for a job this JobManager could not recover, its
	// record as on disk (still unfinished): a later JobManager tries again
	// unless a client cancels the job. rec shows it FAILED meanwhile.
	unrecovered *jobRecord
	mu          sync.Mutex // guards rec of an unrecovered job against Cancel
	// jc is the configuration the job runs with: where its checkpoints
	// are, discarded once it FINISHED (finishedjob.go).
	jc runtime.JobConfig
	// weak are the TaskManagers' failover figures of a WEAKLY_CONSISTENT
	// job, summed into status.Weak.
	weak weakFigures
	// restart, set by reactive mode before it cancels the run, is the
	// parallelism by operator uid to start the job again at; runEnded is
	// set once the run's end is being handled (both under mu).
	restart  map[string]int
	runEnded bool
	// reactive: the job runs in reactive mode, whose rule alone sets its
	// parallelism (REST refuses a rescale).
	reactive bool
}

var _ JobService = (*jobManager)(nil)

// newEndedJob is a job recovered from its record that does not run in
// this JobManager: its status stays CREATED and its commands answer that
// it is not running.
func newEndedJob(r jobRecord) *managedJob {
	st := &jobstatus.JobStatus{}
	return &managedJob{rec: r, status: st, control: runtime.NewJobControl(st), done: closedChan()}
}

func newJobManager(ctx context.Context, cfg JobManagerConfig) *jobManager {
	return &jobManager{cfg: cfg, log: cfg.Logger, store: jobStore{dir: cfg.StateDir}, ctx: ctx, jobs: map[string]*managedJob{}, submitting: map[string]bool{}, autoscalers: map[string]*jobAutoscaler{}, rescaling: map[string]*runtime.RescaleStart{}, reactives: map[string]*reactiveDriver{}, ready: make(chan struct{})}
}

func (m *jobManager) setDispatcher(d *Dispatcher) {
	m.dmu.Lock()
	defer m.dmu.Unlock()
	m.d = d
}

// dispatcher returns the Dispatcher, nil until it runs.
func (m *jobManager) dispatcher() *Dispatcher {
	m.dmu.Lock()
	defer m.dmu.Unlock()
	return m.d
}

// awaitReady waits until the JobManager serves jobs.
func (m *jobManager) awaitReady(ctx context.Context) error {
	select {
	case <-m.ready:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

// job returns the job named name, or nil.
func (m *jobManager) job(name string) *managedJob {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.jobs[name]
}

// running returns the jobs that have not ended.
func (m *jobManager) running() []*managedJob {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*managedJob
	for _, j := range m.jobs {
		select {
		case <-j.done:
		default:
			out = append(out, j)
		}
	}
	return out
}

// onRegistered wakes jobs waiting for slots.
func (m *jobManager) onRegistered(tm *TaskManager) {
	m.slotsFreed("")
	m.reactiveSlotsChanged(fmt.Sprintf("TaskManager %s registered with %d slots", tm.ID, tm.Slots))
}

// slotsFreed wakes the running jobs but except, which may wait for slots
// that were just offered or released.
func (m *jobManager) slotsFreed(except string) {
	for _, j := range m.running() {
		if j.cj != nil && j.rec.Spec.Name != except {
			j.cj.SlotsChanged()
		}
	}
}

// onMessage routes a TaskManager's report to its job's JobMaster.
func (m *jobManager) onMessage(tm *TaskManager, msg *pb.TaskManagerMessage) {
	name := messageJob(msg)
	j := m.job(name)
	if j == nil || j.cj == nil {
		return
	}
	deliverToJob(j.cj.Gateway(), msg, func(what string, err error) {
		m.log.Error(what, "tm", tm.ID, "job", name, "error", err)
	})
}

// onLost tells every running job that a TaskManager is gone; the jobs
// with executions there restart those regions.
func (m *jobManager) onLost(tm *TaskManager, reason error, _ []JobSlots) {
	m.reactiveSlotsChanged(fmt.Sprintf("TaskManager %s lost (%d slots)", tm.ID, tm.Slots))
	for _, j := range m.running() {
		if j.cj != nil {
			j.cj.TaskManagerLost(tmGateway{tm: tm}, errText(reason))
		}
	}
}

func messageJob(m *pb.TaskManagerMessage) string {
	switch x := m.GetMsg().(type) {
	case *pb.TaskManagerMessage_JobPrepared:
		return x.JobPrepared.GetJob()
	case *pb.TaskManagerMessage_TaskStateChanged:
		return x.TaskStateChanged.GetJob()
	case *pb.TaskManagerMessage_Acknowledge:
		return x.Acknowledge.GetJob()
	case *pb.TaskManagerMessage_Decline:
		return x.Decline.GetJob()
	case *pb.TaskManagerMessage_EndOfData:
		return x.EndOfData.GetJob()
	}
	return ""
}

// withDefaultStorage sets the job's checkpoint storage to the state
// folder's checkpoints/ unless the job names one: every role must resolve
// the same absolute location.
func (m *jobManager) withDefaultStorage(spec deployment.JobSpec) deployment.JobSpec {
	if _, ok := spec.Config[config.CheckpointsDir]; ok {
		return spec
	}
	c := make(map[string]string, len(spec.Config)+1)
	for k, v := range spec.Config {
		c[k] = v
	}
	c[config.CheckpointsDir] = m.checkpointsHome()
	spec.Config = c
	return spec
}

// checkpointsHome is where jobs that name no state.checkpoints.dir keep
// their checkpoints: the state folder's checkpoints/, or under high
// availability high-availability.storageDir's, which every JobManager
// reaches.
func (m *jobManager) checkpointsHome() string {
	if m.cfg.HA != nil {
		dir := m.cfg.HA.StorageDir()
		if strings.Contains(dir, "://") {
			return strings.TrimSuffix(dir, "/") + "/checkpoints"
		}
		return filepath.Join(dir, "checkpoints")
	}
	return filepath.Join(m.cfg.StateDir, "checkpoints")
}

// registry is where the job's checkpoints are registered: in HA under
// this JobManager's leadership, none without high availability.
func (m *jobManager) registry(job string) runtime.CheckpointRegistry {
	if m.lead == nil {
		return nil
	}
	return haRegistry{ha: m.cfg.HA, l: m.lead, job: job}
}

// attemptsPerRun spaces the attempt numbers of a job's runs: 2^20
// restarts per run, 2^11 runs within the wire's int32.
const attemptsPerRun = 1 << 20

// submission is what a client's submission asks beyond the spec; a job
// a previous JobManager ran is recovered without one.
type submission struct {
	// rerun lets a run from scratch start although the job's folder
	// records a run that FINISHED (runtime.CheckFinished).
	rerun bool
}

// start builds the job and runs it. A record with FirstCheckpoint > 0
// recovers a job a previous JobManager ran; sub non-nil is a new
// submission, which must not silently resume an earlier run's checkpoints
// nor run a finished job from scratch again unless it asks to.
func (m *jobManager) start(rec jobRecord, sub *submission) (*managedJob, error) {
	fresh := sub != nil
	spec := rec.Spec
	g, jc, err := m.cfg.Resolve(m.ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("build job %s (%s): %w", spec.Name, spec.Kind, err)
	}
	if dir := jc.CheckpointDir; !strings.Contains(dir, "://") && !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("job %s: state.checkpoints.dir %q is relative: every TaskManager would resolve it in its own working folder; give an absolute path", spec.Name, dir)
	}
	if fresh && jc.FromPath == "" {
		jc.JobName = spec.Name
		jc.Rerun = sub.rerun
		// Before the check for an unfinished run: a crash while the
		// finished run's checkpoints were discarded leaves both the
		// marker and its final checkpoint, and the marker says more.
		note, err := runtime.CheckFinished(jc)
		if err != nil {
			return nil, err
		}
		if note != "" {
			// Info, as the start line: a Warn would be aggregated with
			// the previous rerun's (internal/logagg) and not be seen.
			m.log.Info(note, "job", spec.Name)
		}
		if id, err := runtime.NewestCheckpoint(jc); err == nil && id > 0 {
			return nil, fmt.Errorf("job %s: %s/%s holds checkpoint %d of an earlier run of a job with this name: resume it with --from %s/%s/chk-%d, remove that folder, or submit under another --job-name",
				spec.Name, jc.CheckpointDir, spec.Name, id, jc.CheckpointDir, spec.Name, id)
		}
	}
	if fresh && strings.EqualFold(spec.Config[config.SchedulerMode], config.SchedulerReactive) {
		return nil, fmt.Errorf("job %s: scheduler-mode is the JobManager's, not a job's: start weir jobmanager with -D scheduler-mode=reactive (its job then runs on every slot) and submit without it", spec.Name)
	}
	if err := m.checkReactive(spec.Name, jc.Weak, jc.Autoscaler.Enabled, fresh); err != nil {
		return nil, err
	}
	if fresh {
		m.logStart(spec.Name, jc)
	}
	conf := config.New()
	for k, v := range spec.Config {
		_ = conf.Set(k, v) // validated by Resolve
	}
	st := &jobstatus.JobStatus{}
	jc.JobName = spec.Name
	m.mu.Lock()
	jc.Rescaling = m.rescaling[spec.Name]
	delete(m.rescaling, spec.Name)
	m.mu.Unlock()
	jc.Status, jc.Control = st, runtime.NewJobControl(st)
	jc.Logger = m.log.With("job", spec.Name)
	j := &managedJob{rec: rec, status: st, control: jc.Control, conf: conf, done: make(chan struct{}), jc: jc, reactive: m.cfg.Reactive != nil}
	// Each run of the job (the submission, each recovery by a restarted
	// JobManager) numbers its attempts from a base of its own, so a task
	// left over from an earlier run, on a TaskManager that has not noticed
	// yet, is an older attempt: its partition requests are refused as
	// superseded, and none of its reports is taken for the new run's.
	j.rec.Runs++
	cj, err := runtime.NewClusterJob(m.ctx, g, jc, runtime.ClusterJobConfig{
		FirstAttempt:        (j.rec.Runs - 1) * attemptsPerRun,
		ReservedCheckpoints: checkpoint.ID(rec.ReservedCheckpoints),
		ReserveCheckpoints: func(upTo checkpoint.ID) error {
			// On the job's own goroutine, like its end: the record is
			// not written concurrently.
			if m.lead != nil {
				// The counter in etcd: ids never repeat across leaders.
				ctx, cancel := context.WithTimeout(context.Background(), haStoreTimeout)
				defer cancel()
				if _, err := m.lead.ReserveCheckpointIDs(ctx, spec.Name, int64(upTo)); err != nil {
					return fmt.Errorf("reserve checkpoint ids up to %d in etcd: %w", upTo, err)
				}
			}
			j.rec.ReservedCheckpoints = int64(upTo)
			return m.store.save(j.rec)
		},
		Spec:               spec,
		Registry:           m.registry(spec.Name),
		CrashPoint:         m.cfg.CrashPoint,
		Slots:              &jobSlots{d: m.dispatcher(), job: spec.Name, released: m.slotsFreed},
		SlotRequestTimeout: m.cfg.SlotRequestTimeout,
		Reports:            func() []jobstatus.TaskStats { return m.reports(spec.Name, j) },
		ResumeFrom:         checkpoint.ID(rec.FirstCheckpoint),
	})
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", spec.Name, err)
	}
	j.cj = cj
	j.names = cj.VertexNames()
	if jc.Autoscaler.Enabled {
		if err := m.autoscale(spec.Name, jc, cj); err != nil {
			return nil, fmt.Errorf("job %s: %w", spec.Name, err)
		}
	}
	if j.rec.FirstCheckpoint == 0 {
		j.rec.FirstCheckpoint = cj.FirstCheckpoint()
	}
	j.rec.Spec = cj.Spec()
	j.rec.State = jobstatus.StateRunning
	if err := m.store.save(j.rec); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(m.ctx)
	j.cancel = cancel
	m.mu.Lock()
	m.jobs[spec.Name] = j
	m.mu.Unlock()
	if m.onStart != nil {
		m.onStart(j)
	}
	if m.cfg.Reactive != nil {
		if err := m.reactiveAttach(j); err != nil {
			m.log.Error("reactive mode: the job runs at its parallelism", "job", spec.Name, "error", err)
		}
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer cancel()
		err := cj.Run(ctx)
		restart := j.takeRestart()
		if par := cj.Rescaled(); err == nil && par != nil && m.ctx.Err() == nil {
			m.restartRescaled(j, par, cj.RescaleStart())
			return
		}
		if restart != nil && errors.Is(err, context.Canceled) && m.ctx.Err() == nil && !j.canceled.Load() {
			// Ended by reactive mode, to run at the slots there are:
			// not CANCELED, and a new run that cannot start fails it.
			// (A run that finished or failed for good meanwhile ends as
			// it did.)
			jobstatus.RecorderOf(j.status).SetState(jobstatus.StateRestarting, time.Now())
			m.restartRescaled(j, restart, nil)
			return
		}
		m.finished(j, err)
	}()
	m.log.Info("job started", "job", spec.Name, "kind", spec.Kind, "restore_after", rec.FirstCheckpoint)
	return j, nil
}

// autoscale attaches the job's run cj to its autoscaler, started on the
// job's first run.
func (m *jobManager) autoscale(name string, jc runtime.JobConfig, cj *runtime.ClusterJob) error {
	m.mu.Lock()
	as := m.autoscalers[name]
	m.mu.Unlock()
	if as == nil {
		a, err := runtime.NewAutoscaler(jc.Autoscaler, jc.Logger, func() (n int) {
			// The cluster's slots: other jobs' share is not subtracted.
			m.dispatcher().WithSlotPool(func(p *SlotPool) { n = p.Total() })
			return n
		})
		if err != nil {
			return err
		}
		ctx, cancel := context.WithCancel(m.ctx)
		as = &jobAutoscaler{a: a, stop: cancel}
		m.mu.Lock()
		m.autoscalers[name] = as
		m.mu.Unlock()
		go a.Run(ctx)
	}
	return as.a.Attach(cj)
}

// stopAutoscaler stops the job's autoscaler, if it has one.
func (m *jobManager) stopAutoscaler(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if as := m.autoscalers[name]; as != nil {
		as.stop()
		delete(m.autoscalers, name)
	}
}

// restartRescaled starts j again at the parallelism of its in-place
// rescale (par, by operator uid), recorded in its spec, from its newest
// checkpoint: the final one its attempt stopped on. The new run replaces
// j in the job list (its status starts afresh, as after a JobManager
// failover); a new run that cannot start ends the job FAILED, naming the
// rescale.
//
// started, if set, is the in-place rescale the new run carries out: it
// reports the pause once its tasks run.
func (m *jobManager) restartRescaled(j *managedJob, par map[string]int, started *runtime.RescaleStart) {
	rec := j.rec
	rec.Spec.Parallelism = par
	m.log.Info("job rescaled in place: starting it again at the new parallelism", "job", rec.Spec.Name, "parallelism", par)
	if started != nil {
		m.mu.Lock()
		m.rescaling[rec.Spec.Name] = started
		m.mu.Unlock()
	}
	if _, err := m.start(rec, nil); err != nil {
		m.finished(j, fmt.Errorf("rescale: start the job again at the new parallelism %v: %w (its final checkpoint is kept: submit it again with --from)", par, err))
		return
	}
	close(j.done)
}

// finished records a job's end. A job stopped because the JobManager shuts
// down keeps its record as it was: the next JobManager recovers it.
//
// Only a job the shutdown stopped is left unrecorded: one a client
// cancelled (whose end may race the shutdown) is recorded CANCELED, and
// one that finished or failed on its own is recorded as such, or the next
// JobManager would run it again.
func (m *jobManager) finished(j *managedJob, err error) {
	defer close(j.done)
	m.stopAutoscaler(j.rec.Spec.Name)
	m.stopReactive(j.rec.Spec.Name)
	// A WEAKLY_CONSISTENT job's figures are counted on the TaskManagers,
	// which send their last ones as they release the job.
	j.weak.awaitFinal(m.dispatcher().live, weakFinalTimeout)
	if m.ctx.Err() != nil && errors.Is(err, context.Canceled) && !j.canceled.Load() {
		m.log.Info("job suspended: the JobManager shuts down", "job", j.rec.Spec.Name)
		return
	}
	j.rec.State = j.status.State()
	if err != nil && !terminalState(j.rec.State) {
		j.rec.State = jobstatus.StateFailed
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		j.rec.Failure = err.Error()
	}
	j.rec.Ended = time.Now()
	serr := m.store.save(j.rec)
	if serr != nil {
		m.log.Error("record job end", "job", j.rec.Spec.Name, "error", serr)
	}
	m.log.Info("job ended", "job", j.rec.Spec.Name, "state", j.rec.State, "error", err)
	if serr == nil {
		m.discardFinished(j)
	}
}

// recover starts every job a previous JobManager left unfinished.
func (m *jobManager) recover() {
	recs, errs := m.store.load()
	for _, err := range errs {
		m.log.Error("job record skipped", "error", err)
	}
	if m.cfg.Reactive != nil {
		var unfinished []string
		for _, r := range recs {
			if !terminalState(r.State) {
				unfinished = append(unfinished, r.Spec.Name)
			}
		}
		if len(unfinished) > 1 {
			// Submissions refuse a second job; these ran before the
			// JobManager was started in reactive mode.
			m.log.Warn("reactive mode gives every slot to one job, but several unfinished jobs are recovered: each scales to every slot and they wait for each other's; cancel all but one", "jobs", unfinished)
		}
	}
	for _, r := range recs {
		if m.cfg.HA != nil && !terminalState(r.State) {
			// The counter may be ahead of the record (a leader that
			// crashed between the two writes): start above both.
			ctx, cancel := context.WithTimeout(context.Background(), haStoreTimeout)
			bound, err := m.cfg.HA.CheckpointIDBound(ctx, r.Spec.Name)
			cancel()
			if err != nil {
				m.log.Error("read the checkpoint id counter; recovering the job on its record's bound", "job", r.Spec.Name, "error", err)
			}
			r.ReservedCheckpoints = max(r.ReservedCheckpoints, bound)
		}
		if terminalState(r.State) {
			m.mu.Lock()
			m.jobs[r.Spec.Name] = newEndedJob(r)
			m.mu.Unlock()
			continue
		}
		if _, err := m.start(r, nil); err != nil {
			// The record stays unfinished on disk: the cause may pass (a
			// storage outage), and the next JobManager tries again.
			m.log.Error("recover job", "job", r.Spec.Name, "error", err)
			disk := r
			r.State, r.Ended = jobstatus.StateFailed, time.Now()
			r.Failure = fmt.Sprintf("recovery failed: %v; its record is kept: start the JobManager again to retry, or cancel the job to give it up", err)
			m.mu.Lock()
			j := newEndedJob(r)
			j.unrecovered = &disk
			m.jobs[r.Spec.Name] = j
			m.mu.Unlock()
			continue
		}
		m.log.Info("job recovered", "job", r.Spec.Name)
	}
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// state returns the job's state and failure.
func (j *managedJob) state() (jobstatus.JobState, string) {
	select {
	case <-j.done:
		j.mu.Lock()
		defer j.mu.Unlock()
		return j.rec.State, j.rec.Failure
	default:
	}
	j.mu.Lock()
	restarting := j.restart != nil
	j.mu.Unlock()
	if restarting {
		// Cancelled by reactive mode to start again at the slots there
		// are: its status says CANCELED until the new run replaces it.
		return jobstatus.StateRestarting, ""
	}
	s := j.status.State()
	if s == "" {
		s = jobstatus.StateCreated
	}
	return s, j.status.LastFailure()
}

// ended returns when the job ended, zero while it runs. The job's
// goroutine writes the record's end before done closes: it is read after;
// before, a job whose state is terminal already (state reports it) has
// its status's end time.
func (j *managedJob) ended() time.Time {
	select {
	case <-j.done:
		j.mu.Lock()
		defer j.mu.Unlock()
		return j.rec.Ended
	default:
		_, end := j.status.Times()
		return end
	}
}

// reportedWatermark is a heartbeat's watermark; one an older TaskManager
// did not send is no watermark yet.
func reportedWatermark(wm *int64) int64 {
	if wm == nil {
		return watermark.MinWatermark
	}
	return *wm
}

// reports merges the job's task counters from the TaskManagers' latest
// heartbeats.
func (m *jobManager) reports(job string, j *managedJob) []jobstatus.TaskStats {
	var out []jobstatus.TaskStats
	for _, tm := range m.dispatcher().sessionList() {
		for _, r := range tm.Reports() {
			if r.GetJob() != job {
				continue
			}
			e := execFromPB(r.GetExec())
			out = append(out, jobstatus.TaskStats{
				Vertex: e.Task.Vertex, Subtask: e.Task.Subtask, Name: j.names[e.Task.Vertex],
				RecordsIn: r.GetRecordsIn(), RecordsOut: r.GetRecordsOut(), BackPressured: r.GetBackPressured(),
				AlignmentTime: time.Duration(r.GetAlignmentTimeNanos()), CreditsAvailable: int(r.GetCreditsAvailable()),
				InputWatermark: reportedWatermark(r.InputWatermark), OutputWatermark: reportedWatermark(r.OutputWatermark),
				LateRecordsDropped: r.GetLateRecordsDropped(),
				Weak:               weakFromPB(r.GetWeak()),
				Gauges:             gaugesFromPB(r.GetGauges()),
				Time: jobstatus.TaskTime{
					Busy: time.Duration(r.GetBusyNanos()), Idle: time.Duration(r.GetIdleNanos()),
					BackPressured:   time.Duration(r.GetBackPressuredNanos()),
					BusyMsPerSecond: r.GetBusyMsPerSecond(), IdleMsPerSecond: r.GetIdleMsPerSecond(),
					BackPressuredMsPerSecond: r.GetBackPressuredMsPerSecond(),
				},
			})
		}
	}
	slices.SortFunc(out, func(a, b jobstatus.TaskStats) int {
		if a.Vertex != b.Vertex {
			return a.Vertex - b.Vertex
		}
		return a.Subtask - b.Subtask
	})
	return out
}
