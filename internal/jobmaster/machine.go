package jobmaster

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/coordinator"
	"github.com/weirstream/weir/internal/failover"
	"github.com/weirstream/weir/internal/restart"
)

// reservationStep is how many checkpoint ids one reservation covers.
const reservationStep = 100

// slotWaitLog is how often a deployment waiting for slots says so.
const slotWaitLog = 10 * time.Second

// execution is the Machine's view of a subtask's current execution. A
// never-deployed one is CANCELED, so every non-terminal one has a TM.
type execution struct {
	attempt int
	state   ExecState
	tm      TM
	placed  bool // deployed at least once by this Machine: tm is where
	// covered: a final checkpoint this attempt acknowledged completed and
	// was told, so it may finish (TaskFinal); a FINISHED report before
	// that is refused (refuseFinished).
	covered bool
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

// Machine is the JobMaster's rules as a pure state machine: Step applies
// an event at a time and returns the actions to perform. See doc.go.
type Machine struct {
	cfg Config
	log *slog.Logger
	now time.Time
	out []Action
	// slotOf is where each logical slot was placed last: a task restarted
	// alone (per-task snapshots) is deployed with the slots of its peers
	// too, which keep running where they are.
	slotOf   map[int]Slot
	regionOf map[checkpoint.TaskID]int
	handler  *failover.Handler
	strategy *recordingStrategy
	coord    *coordinator.Coordinator
	// mode takes the job's snapshots and restarts what fails: barrier
	// checkpoints with region failover, or per-task snapshots with
	// single-task failover (mode.go).
	mode snapshotMode

	execs    map[checkpoint.TaskID]*execution
	live     int // executions deployed and not terminal
	finished int // executions FINISHED
	// finalDone: a final checkpoint completed and was told, so tasks may
	// be finishing. A finished task cannot ack another checkpoint: from
	// now on a failure restarts every region, which takes a new final
	// checkpoint together.
	finalDone bool
	eod       map[checkpoint.TaskID]bool

	// tms are the TaskManagers the job is prepared on, in order.
	tms      []TM
	prepared map[TM]bool
	started  bool
	deployed bool
	waiting  *slotWait

	fq       []failover.Event // failover events not yet stepped
	timers   []time.Time      // failover handler ticks asked for
	restarts []int            // regions due for a restart
	// persisting counts metadata writes in flight, and with
	// Config.Register their registrations until Registered; loading is a
	// LoadLatest in flight; copying counts savepoint copies in flight.
	persisting int
	// persistKind is the kind of each checkpoint whose metadata is being
	// written (Config.Register), for its RegisterCheckpoint.
	persistKind map[checkpoint.ID]checkpoint.Kind
	loading     bool
	copying     int

	reserved  checkpoint.ID
	reserving bool
	// waive lets the held barriers go without a reservation (it failed).
	waive bool
	// sweeping counts shared-file sweeps in flight (Retain or Discard
	// with Sweep, until Swept).
	sweeping int
	held     []coordinator.Trigger // barriers waiting for a reservation or a sweep

	savepoints map[checkpoint.ID][]Request
	queued     []Request // waiting for a free checkpoint slot
	stops      []pendingStop
	triggered  map[checkpoint.ID]bool
	completed  map[checkpoint.ID]bool

	// failCause is the failure the handler is being told about. end is
	// the job's failure (the strategy gave up), fatal an error returned as
	// is, canceled the context's error.
	failCause error
	end       error
	fatal     error
	canceled  error
	draining  bool
	ended     bool
	state     JobState
}

// pendingStop is a stop request and, once a final checkpoint completed
// (and was copied), its answer.
type pendingStop struct {
	req    Request
	result Answer
	done   bool
}

// New returns the Machine of cfg at time now; feed it Start.
func New(cfg Config, now time.Time) *Machine {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.FirstOwn < 1 {
		cfg.FirstOwn = 1
	}
	cfg = modeConfig(cfg)
	m := &Machine{
		cfg:        cfg,
		log:        cfg.Logger,
		now:        now,
		regionOf:   failover.RegionIndex(cfg.Regions),
		strategy:   &recordingStrategy{Strategy: cfg.Restart},
		execs:      map[checkpoint.TaskID]*execution{},
		eod:        map[checkpoint.TaskID]bool{},
		prepared:   map[TM]bool{},
		reserved:   cfg.Reserved,
		savepoints: map[checkpoint.ID][]Request{},
		triggered:  map[checkpoint.ID]bool{},
		completed:  map[checkpoint.ID]bool{},

		persistKind: map[checkpoint.ID]checkpoint.Kind{},
	}
	m.handler = failover.NewHandler(cfg.Regions, m.strategy)
	m.mode = newMode(m)
	m.coord = coordinator.New(m.mode.coordinatorConfig(cfg.Checkpoint), cfg.Tasks, cfg.Sources, cfg.FirstOwn, now)
	// No checkpoint before the job is deployed: a barrier sent before
	// Deploy reaches no execution, and its checkpoint would stay pending
	// until execution.checkpointing.timeout, holding back the final
	// checkpoint of a bounded job all that time (preparedJob resumes).
	m.coord.Step(coordinator.Suspend{Reason: "the job is being deployed"})
	for _, t := range cfg.Tasks {
		m.execs[t] = &execution{attempt: cfg.FirstAttempt, state: ExecCanceled}
	}
	return m
}

// Step applies ev at time now and returns the actions to perform, in
// order. After JobEnded it ignores every event.
func (m *Machine) Step(now time.Time, ev Event) []Action {
	m.now = now
	m.out = nil
	if m.ended {
		return nil
	}
	m.handle(ev)
	m.runFailover()
	m.checkEnd()
	m.updateState()
	return m.out
}

// State returns the job's state: CREATED until deployed, RESTARTING while
// no region runs (the whole job restarts), RUNNING otherwise, and the
// outcome once ended.
func (m *Machine) State() JobState { return m.state }

// Restarts returns how many failures restarted (part of) the job.
func (m *Machine) Restarts() int { return m.handler.Restarts() }

// Ended reports whether JobEnded was returned.
func (m *Machine) Ended() bool { return m.ended }

// Current reports whether exec is its task's current, live execution:
// only its reports reach the rules.
func (m *Machine) Current(exec ExecutionID) bool {
	e := m.execs[exec.Task]
	return e != nil && e.attempt == exec.Attempt && !e.state.Terminal()
}

// Exec returns the current attempt and state of task t; the zero state
// for a task not deployed yet.
func (m *Machine) Exec(t checkpoint.TaskID) (ExecutionID, ExecState) {
	e := m.execs[t]
	if e == nil {
		return ExecutionID{Task: t}, 0
	}
	return ExecutionID{Task: t, Attempt: e.attempt}, e.state
}

// NextDeadline is when the Machine wants a Tick: the coordinator's next
// deadline, the earliest failover timer or a slot wait's next retry.
func (m *Machine) NextDeadline() (time.Time, bool) {
	var at time.Time
	if d, ok := m.coord.NextDeadline(); ok {
		at = d
	}
	if d, ok := m.mode.nextDeadline(); ok && (at.IsZero() || d.Before(at)) {
		at = d
	}
	for _, t := range m.timers {
		if at.IsZero() || t.Before(at) {
			at = t
		}
	}
	if w := m.waiting; w != nil && (at.IsZero() || w.next.Before(at)) {
		at = w.next
	}
	return at, !at.IsZero()
}

func (m *Machine) emit(a Action) { m.out = append(m.out, a) }

func (m *Machine) handle(ev Event) {
	switch ev := ev.(type) {
	case Start:
		m.start()
	case Prepared:
		m.preparedJob(ev.Err)
	case SlotsOffered:
		m.retryWaiting()
	case TaskManagerLost:
		m.taskManagerLost(ev.TM, ev.Cause)
	case StoreDone:
		m.storeDone(ev)
	case StorageProbed:
		m.coordStep(coordinator.StorageProbed{Err: ev.Err, Now: m.now})
	case Registered:
		m.registered(ev)
	case LatestLoaded:
		m.latestLoaded(ev)
	case SavepointCopied:
		m.savepointCopied(ev)
	case IDsReserved:
		m.idsReserved(ev)
	case Swept:
		m.sweeping--
		m.releaseHeld()
	case Tick:
		if m.draining {
			return // nothing starts while the job ends
		}
		m.slotTick()
		m.coordStep(coordinator.Tick{Now: m.now})
		m.mode.tick()
		m.timers = slices.DeleteFunc(m.timers, func(at time.Time) bool { return !at.After(m.now) })
		m.feed(failover.Tick{Now: m.now})
	case Request:
		m.serve(ev)
	case Cancel:
		m.canceled = ev.Err
	case StateChanged:
		if e := m.current(ev.Exec); e != nil {
			m.stateChanged(ev.Exec.Task, e, ev.State, ev.Err)
		}
	case Ack:
		if m.current(ev.Exec) != nil {
			m.mode.ack(ev)
		}
	case Decline:
		if m.current(ev.Exec) != nil {
			m.mode.decline(ev)
		}
	case EndOfData:
		if m.current(ev.Exec) != nil {
			m.endOfData(ev.Exec.Task)
		}
	default:
		panic(fmt.Sprintf("jobmaster: unknown event %T", ev))
	}
}

// current returns exec's execution if it is its task's current, live
// one; reports of any other come from a cancelled attempt.
func (m *Machine) current(exec ExecutionID) *execution {
	e := m.execs[exec.Task]
	if e == nil || e.attempt != exec.Attempt || e.state.Terminal() {
		return nil
	}
	return e
}

func (m *Machine) start() {
	if m.started {
		return
	}
	m.started = true
	for _, tm := range m.cfg.TaskManagers {
		m.prepareOn(tm)
	}
	if len(m.cfg.TaskManagers) == 0 {
		// Each TaskManager is prepared before its first deployment.
		m.preparedJob(nil)
	}
}

func (m *Machine) prepareOn(tm TM) {
	if m.prepared[tm] {
		return
	}
	m.prepared[tm] = true
	m.tms = append(m.tms, tm)
	m.emit(PrepareJob{TM: tm})
}

// preparedJob deploys the whole job once its TaskManagers prepared it.
func (m *Machine) preparedJob(err error) {
	if err != nil {
		m.fatal = fmt.Errorf("job %s: %w", m.cfg.Name, err)
		return
	}
	if m.deployed {
		return
	}
	m.deployed = true
	if rp := m.cfg.Initial; rp != nil {
		m.log.Info("restoring", "checkpoint", rp.ID, "path", rp.Path, "attempt", m.execs[m.cfg.Tasks[0]].attempt)
	}
	m.deploy(m.cfg.Tasks, m.cfg.Initial)
	if m.waiting == nil && !m.anyRegionFailing() {
		// Deployed at once; a deployment waiting for slots resumes once
		// it is placed (retryWaiting).
		m.mode.resume()
	}
}

func (m *Machine) endOfData(t checkpoint.TaskID) {
	if m.eod[t] || m.draining {
		return
	}
	m.mode.endOfData(t)
}

// endOfInput counts task t's end of input towards the job's: once every
// task's input ended, the coordinator takes the final checkpoint
// (barrier checkpoints).
func (m *Machine) endOfInput(t checkpoint.TaskID) {
	if m.regionFailing(m.regionOf[t]) {
		// A task of a failing region, not yet cancelled, ran to the end
		// of its input: its region restarts and reads it again. Counted,
		// it would complete the end-of-data set while checkpointing is
		// suspended, and the resume would take the final checkpoint
		// before the restarted tasks read anything.
		return
	}
	m.eod[t] = true
	if len(m.eod) == len(m.cfg.Tasks) {
		m.coordStep(coordinator.EndOfInput{Now: m.now})
	}
}

func (m *Machine) stateChanged(t checkpoint.TaskID, e *execution, st ExecState, err error) {
	e.state = st
	if st.Terminal() {
		m.live--
	}
	if m.draining {
		return
	}
	switch st {
	case ExecRunning:
		m.feed(failover.TaskRunning{Task: t})
	case ExecFinished:
		if m.mode.finishNeedsFinalCheckpoint() && !e.covered {
			m.refuseFinished(t, e)
			break
		}
		m.finished++
		m.feed(failover.TaskTerminal{Task: t})
	case ExecCanceled:
		m.feed(failover.TaskTerminal{Task: t})
	case ExecFailed:
		m.taskFailed(t, err)
	}
	m.mode.stateChanged(t, st, err)
}

// refuseFinished handles a FINISHED report of an execution that no
// completed final checkpoint covers: a task may finish only once told
// that a final checkpoint it took part in completed (TaskFinal), and none
// did, or it was not told (a final checkpoint held back while a region
// restarts). A TaskManager of an older version finishes a task on any
// checkpoint that completes after the final checkpoint it snapshotted,
// even when that one was aborted (issue 31): at parallelism 2 and more,
// when another region fails during final checkpoint F, the next periodic
// checkpoint finishes the tasks of the regions that snapshotted F, and the
// restarted region's final checkpoint waits for their acks until
// execution.checkpointing.timeout.
//
// The report is a failure, not ignored. Ignored, the Machine would count
// on a task that is gone: every final checkpoint would wait for its ack
// until it expires. A failure restarts from the newest completed
// checkpoint, which is safe: a task commits only on a completion, so
// nothing was committed beyond a completed checkpoint. And it restarts
// every region, not only the task's: the other regions' tasks may hold a
// final checkpoint that was aborted too, and a region restarted alone
// would abort the final checkpoint they take next while it reads its input
// again, so that they finish early in turn, region after region (the
// random test found that ping-pong). Restarted together, the regions take
// the next final checkpoint together, as after any failure once a final
// checkpoint was told (taskFailed). If the task's region is failing
// already, the task only counts as stopped, as any task failing then.
func (m *Machine) refuseFinished(t checkpoint.TaskID, e *execution) {
	e.state = ExecFailed // counted as the failure it is: a restart must not count it finished
	err := fmt.Errorf("task %d/%d finished before a final checkpoint covering it completed (a TaskManager of an older version finishes on a checkpoint after its aborted final one)", t.Vertex, t.Subtask)
	if m.regionFailing(m.regionOf[t]) {
		m.feed(failover.TaskFailed{Task: t, Err: err, Now: m.now})
		return
	}
	m.log.Warn("FINISHED refused: no completed final checkpoint covers the task; restarting every region", "task", t, "attempt", e.attempt)
	m.emit(Failure{Cause: err.Error()})
	m.failCause = err
	delete(m.eod, t)
	m.feed(failover.GlobalFailure{Reason: err.Error(), Now: m.now})
}

// taskFailed tells the failover handler about a failed execution.
func (m *Machine) taskFailed(t checkpoint.TaskID, err error) {
	if err == nil {
		err = errors.New("failed without an error")
	}
	r := m.regionOf[t]
	if m.regionFailing(r) {
		// Failing already: the task counts as stopped.
		m.feed(failover.TaskFailed{Task: t, Err: err, Now: m.now})
		return
	}
	m.emit(Failure{Cause: err.Error()})
	m.failCause = err
	delete(m.eod, t)
	unrecoverable := IsUnrecoverable(err)
	if !unrecoverable && m.finalDone {
		// The final checkpoint completed, so tasks are finishing (some
		// may have, others will before they hear of this failure): a
		// finished task cannot take part in the final checkpoint of a
		// restarted region, so every region restarts (finished tasks
		// count as stopped).
		m.log.Warn("task failed after others finished; restarting every region", "task", t, "cause", err)
		m.feed(failover.GlobalFailure{Reason: err.Error(), Now: m.now})
		return
	}
	if unrecoverable {
		m.log.Warn("task failed with an error no restart can fix; failing the job", "task", t, "cause", err)
	} else {
		m.mode.logFailure(t, r, err)
	}
	m.feed(failover.TaskFailed{Task: t, Err: err, Unrecoverable: unrecoverable, Now: m.now})
}

// regionFailing reports whether region r is being cancelled or waits for
// its restart.
func (m *Machine) regionFailing(r int) bool {
	s := m.handler.State(r)
	return s == failover.Canceling || s == failover.Waiting
}

func (m *Machine) anyRegionFailing() bool {
	for r := range m.cfg.Regions {
		if m.regionFailing(r) {
			return true
		}
	}
	return false
}

// updateState shows RESTARTING while no region is deployed (the whole
// job restarts) and RUNNING otherwise: a job whose other regions run on
// is running.
func (m *Machine) updateState() {
	if !m.deployed || m.draining {
		return
	}
	m.state = JobRestarting
	for r := range m.cfg.Regions {
		if s := m.handler.State(r); s == failover.Running || s == failover.Restoring {
			m.state = JobRunning
			return
		}
	}
}
