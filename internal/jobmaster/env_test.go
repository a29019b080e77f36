package jobmaster

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/coordinator"
	"github.com/weirstream/weir/internal/restart"
)

// t0 is the origin of test time.
var t0 = time.Unix(1000, 0)

// env plays everything around a Machine: fake TaskManagers that run the
// executions they were told to, a fake slot pool (cluster placement) or
// executor list (local placement), and checkpoint storage whose actions
// stay pending until the script completes them. It checks invariants on
// every action (see check).
type env struct {
	m       *Machine
	cfg     Config
	now     time.Time
	regions [][]checkpoint.TaskID
	// tms: TaskManager -> alive; slots: free slots per TaskManager
	// (cluster placement only); held: logical slot -> TM.
	tms     map[TM]bool
	cluster bool
	slots   map[TM]int
	held    map[int]TM
	// running are the executions alive on a TaskManager (deployed, not
	// reported terminal), with their state as the TaskManager knows it.
	running map[ExecutionID]ExecState
	where   map[ExecutionID]TM
	// cancelAsked are executions asked to cancel, not yet reported.
	cancelAsked map[ExecutionID]bool
	// storage pending, in order.
	pending []Action
	// durable are checkpoints whose metadata is written; acked the tasks
	// that acked each checkpoint (current attempts, as sent).
	durable map[checkpoint.ID]bool
	// registered are checkpoints whose registration succeeded
	// (Config.Register): only those are complete and restorable.
	registered map[checkpoint.ID]bool
	// refused counts registrations the random test refused.
	refused   int
	acked     map[checkpoint.ID]map[checkpoint.TaskID]bool
	nextReq   RequestID
	violation []string
	// For the random test: triggered checkpoints (and their kinds), the
	// checkpoints each execution acked, end of data sent.
	triggered []checkpoint.ID
	kindOf    map[checkpoint.ID]checkpoint.Kind
	ackedBy   map[ExecutionID][]checkpoint.ID
	eodSent   map[ExecutionID]bool
	// Each execution's side of the final checkpoint, as a runtime task
	// keeps it (TaskFinal, fed with its snapshots and the notifications
	// its TaskManager is told), how far it was told completions, and
	// whether a completion told it to finish: the random test's tasks
	// finish exactly when the runtime's would.
	finals    map[ExecutionID]*TaskFinal
	toldUpTo  map[ExecutionID]checkpoint.ID
	mayFinish map[ExecutionID]bool
	// settling: nothing fails any more (the random test's settle).
	settling bool
	// deployedDuring are checkpoints whose metadata write was in flight
	// when a deployment chose its restore point: none may complete.
	deployedDuring map[checkpoint.ID]bool
	// deployedAt is how many checkpoints were triggered when an
	// execution was deployed: it can ack only those triggered after.
	deployedAt map[ExecutionID]int
	// reserved is the checkpoint-id bound durable so far (Config.Reserve);
	// after a failed reservation barriers may go ahead (reserveFailed).
	reserved      checkpoint.ID
	reserveFailed bool
	// manualSweep keeps sweeps (Retain or Discard with Sweep) pending in
	// storage like other storage actions; else each is done (Swept) right
	// after the step that asked for it. autoSweeps counts those due.
	manualSweep bool
	autoSweeps  int
	// Config.Weak: the task each snapshot was triggered for, and each
	// task's snapshot in flight (from its trigger until it is told
	// complete or aborted).
	triggeredFor map[checkpoint.ID]checkpoint.TaskID
	weakInFlight map[checkpoint.TaskID]checkpoint.ID
}

func newEnv(cfg Config, regions [][]checkpoint.TaskID, tms int, cluster bool, slots []int) *env {
	e := &env{
		cfg: cfg, now: t0, regions: regions, tms: map[TM]bool{}, cluster: cluster,
		slots: map[TM]int{}, held: map[int]TM{},
		running: map[ExecutionID]ExecState{}, where: map[ExecutionID]TM{}, cancelAsked: map[ExecutionID]bool{},
		durable: map[checkpoint.ID]bool{}, registered: map[checkpoint.ID]bool{}, acked: map[checkpoint.ID]map[checkpoint.TaskID]bool{},
		ackedBy: map[ExecutionID][]checkpoint.ID{}, eodSent: map[ExecutionID]bool{}, kindOf: map[checkpoint.ID]checkpoint.Kind{},
		finals: map[ExecutionID]*TaskFinal{}, toldUpTo: map[ExecutionID]checkpoint.ID{}, mayFinish: map[ExecutionID]bool{},
		deployedDuring: map[checkpoint.ID]bool{}, deployedAt: map[ExecutionID]int{},
		triggeredFor: map[checkpoint.ID]checkpoint.TaskID{}, weakInFlight: map[checkpoint.TaskID]checkpoint.ID{},
	}
	if cluster {
		for i, n := range slots {
			e.tms[TM(i)] = true
			e.slots[TM(i)] = n
		}
	} else {
		for i := range tms {
			e.tms[TM(i)] = true
			e.cfg.TaskManagers = append(e.cfg.TaskManagers, TM(i))
		}
	}
	e.cfg.Regions = regions
	e.cfg.Tasks = slices.Concat(regions...)
	slices.SortFunc(e.cfg.Tasks, compareTaskID)
	if e.cfg.Sources == nil {
		for _, t := range e.cfg.Tasks {
			if t.Vertex == 0 {
				e.cfg.Sources = append(e.cfg.Sources, t)
			}
		}
	}
	e.cfg.Placement = e
	e.reserved = e.cfg.Reserved
	for t, id := range e.cfg.WeakLatest {
		// An earlier run's snapshots: durable (and registered), each its
		// task's.
		e.durable[id], e.registered[id] = true, true
		e.triggeredFor[id] = t
	}
	e.m = New(e.cfg, e.now)
	return e
}

// defaultConfig is a job without periodic checkpoints that restarts five
// times without delay.
func defaultConfig() Config {
	cc := coordinator.DefaultConfig()
	cc.Interval = 0
	return Config{Name: "j", Checkpoint: cc, Restart: restart.NewFixedDelay(5, 0), SlotTimeout: time.Minute}
}

// Place implements Placement: local placement puts logical slot i on
// TaskManager i mod n; cluster placement takes free slots, lowest
// TaskManager first, keeping a held slot's place.
func (e *env) Place(logical []int) (map[int]Slot, string) {
	out := map[int]Slot{}
	if !e.cluster {
		n := len(e.cfg.TaskManagers)
		for _, l := range logical {
			out[l] = Slot{TM: TM(l % n), Address: fmt.Sprintf("addr-%d", l%n)}
		}
		return out, ""
	}
	free := 0
	for tm, n := range e.slots {
		if e.tms[tm] {
			free += n
		}
	}
	need := 0
	for _, l := range logical {
		if _, ok := e.held[l]; !ok {
			need++
		}
	}
	if need > free {
		return nil, fmt.Sprintf("job j needs %d slots, %d free", need, free)
	}
	for _, l := range logical {
		tm, ok := e.held[l]
		if !ok {
			for c := TM(0); ; c++ {
				if e.tms[c] && e.slots[c] > 0 {
					tm = c
					break
				}
			}
			e.slots[tm]--
			e.held[l] = tm
		}
		out[l] = Slot{TM: tm, Address: fmt.Sprintf("addr-%d", tm)}
	}
	return out, ""
}

// step feeds ev and performs the actions on the fake cluster; it returns
// them formatted, one per line.
func (e *env) step(ev Event) string {
	acts := e.m.Step(e.now, ev)
	var b strings.Builder
	for _, a := range acts {
		e.perform(a)
		b.WriteString(format(a, e.now))
		b.WriteByte('\n')
	}
	for e.autoSweeps > 0 {
		e.autoSweeps--
		if out := e.step(Swept{}); out != "(no actions)\n" {
			b.WriteString(out)
		}
	}
	if b.Len() == 0 {
		return "(no actions)\n"
	}
	return b.String()
}

// perform plays an action on the fake TaskManagers and storage, and
// checks the invariants.
func (e *env) perform(a Action) {
	switch a := a.(type) {
	case Deploy:
		if rp := a.Restore; rp != nil && rp.Own && !e.durable[rp.ID] && (e.cfg.Initial == nil || rp.ID != e.cfg.Initial.ID) {
			e.violate("deploy restores checkpoint %d, which is not durable", rp.ID)
		}
		if rp := a.Restore; e.cfg.Register && rp != nil && rp.Own && !e.registered[rp.ID] && (e.cfg.Initial == nil || rp.ID != e.cfg.Initial.ID) {
			e.violate("deploy restores checkpoint %d, which is not registered", rp.ID)
		}
		if e.cfg.Weak {
			// A task restarts alone from its own newest completed
			// snapshot, else the job's initial point.
			for _, g := range a.Groups {
				for _, x := range g.Execs {
					if want := e.weakLatest(x.Task); want.String() != a.Restore.String() {
						e.violate("deploy of %s restores %s, its newest completed snapshot is %s", x, a.Restore, want)
					}
				}
			}
		} else if e.cfg.Initial == nil {
			// A region restarts from the newest completed checkpoint.
			if want := e.latest(); want.String() != a.Restore.String() {
				e.violate("deploy restores %s, the newest completed checkpoint is %s", a.Restore, want)
			}
		}
		for _, p := range e.pending {
			// A write (or registration) in flight may still complete a
			// newer checkpoint, which the deployment would then not
			// restore. With Config.Weak only a write of a task deployed
			// matters.
			var id checkpoint.ID
			switch p := p.(type) {
			case PersistMetadata:
				id = p.ID
			case RegisterCheckpoint:
				id = p.ID
			default:
				continue
			}
			if !e.cfg.Weak || slices.ContainsFunc(a.Groups, func(g Group) bool {
				return slices.ContainsFunc(g.Execs, func(x ExecutionID) bool { return x.Task == e.triggeredFor[id] })
			}) {
				e.deployedDuring[id] = true
			}
		}
		for _, g := range a.Groups {
			if !e.tms[g.TM] {
				e.violate("deploy on lost TaskManager %d", g.TM)
			}
			for _, x := range g.Execs {
				for y := range e.running {
					if y.Task == x.Task && e.tms[e.where[y]] {
						e.violate("deploy %s while %s still runs on TaskManager %d", x, y, e.where[y])
					}
				}
				e.running[x] = ExecDeploying
				e.where[x] = g.TM
				e.deployedAt[x] = len(e.triggered)
			}
		}
	case WeakPeers:
		if !e.cfg.Weak {
			e.violate("weak-peers without Config.Weak")
		}
		for _, t := range a.Finished {
			if _, st := e.m.Exec(t); st != ExecFinished {
				e.violate("weak-peers names %d/%d finished; it is %s", t.Vertex, t.Subtask, st)
			}
		}
		for _, p := range a.Moved {
			if x, _ := e.m.Exec(p.Exec.Task); x != p.Exec {
				e.violate("weak-peers moves %s; the current attempt is %s", p.Exec, x)
			}
			if e.where[p.Exec] != p.Slot.TM {
				e.violate("weak-peers moves %s to TaskManager %d; it was deployed on %d", p.Exec, p.Slot.TM, e.where[p.Exec])
			}
		}
	case CancelExecs:
		if e.cfg.Weak && !e.m.draining {
			// A failure restarts the failed task alone: no other task is
			// ever cancelled but when the job ends.
			e.violate("cancel %s while the job runs", formatGroups(a.Groups))
		}
		for _, g := range a.Groups {
			for _, x := range g.Execs {
				if _, ok := e.running[x]; ok {
					e.cancelAsked[x] = true
				}
			}
		}
	case PersistMetadata:
		if e.cfg.Weak {
			t := e.triggeredFor[a.ID]
			if len(a.States) != 1 || a.States[0].Task != t || !e.acked[a.ID][t] {
				e.violate("snapshot %d of %d/%d persisted with %d states, without its ack", a.ID, t.Vertex, t.Subtask, len(a.States))
			}
			e.pending = append(e.pending, a)
			break
		}
		if len(a.States) != len(e.cfg.Tasks) {
			e.violate("checkpoint %d persisted with %d of %d states", a.ID, len(a.States), len(e.cfg.Tasks))
		}
		for _, t := range e.cfg.Tasks {
			if !e.acked[a.ID][t] {
				e.violate("checkpoint %d persisted without an ack of %d/%d", a.ID, t.Vertex, t.Subtask)
			}
		}
		e.pending = append(e.pending, a)
	case RegisterCheckpoint:
		if !e.cfg.Register {
			e.violate("checkpoint %d registered without Config.Register", a.ID)
		}
		if !e.durable[a.ID] {
			e.violate("checkpoint %d registered before its metadata is durable", a.ID)
		}
		e.pending = append(e.pending, a)
	case NotifyComplete:
		// Nothing is committed beyond the newest completed checkpoint:
		// a notification names a durable checkpoint every task acked.
		if !e.durable[a.ID] {
			e.violate("checkpoint %d notified complete before its metadata is durable", a.ID)
		}
		if e.cfg.Register && !e.registered[a.ID] {
			e.violate("checkpoint %d notified complete before it was registered", a.ID)
		}
		if e.cfg.Weak {
			t := e.triggeredFor[a.ID]
			if !e.acked[a.ID][t] {
				e.violate("snapshot %d completed without an ack of %d/%d", a.ID, t.Vertex, t.Subtask)
			}
			e.weakTold(a.ID, t, a.Groups)
		} else {
			for _, t := range e.cfg.Tasks {
				if !e.acked[a.ID][t] {
					e.violate("checkpoint %d completed without an ack of %d/%d", a.ID, t.Vertex, t.Subtask)
				}
			}
		}
		if !a.Held {
			for _, x := range e.told(a.TMs, a.Groups) {
				// As Task.notifyComplete: a completion at or below one
				// told already is not news.
				if a.ID <= e.toldUpTo[x] {
					continue
				}
				e.toldUpTo[x] = a.ID
				if e.final(x).Completed(a.ID, a.Kind, true) {
					e.mayFinish[x] = true
				}
			}
		}
	case Retain, Discard:
		if sweeps(a) {
			if e.manualSweep {
				e.pending = append(e.pending, a)
			} else {
				e.autoSweeps++
			}
		}
	case NotifyAborted:
		if e.cfg.Weak {
			e.weakTold(a.ID, e.triggeredFor[a.ID], a.Groups)
		}
		for _, x := range e.told(a.TMs, a.Groups) {
			e.final(x).Aborted(a.ID)
		}
	case TriggerCheckpoint:
		if e.cfg.Weak {
			// No barriers: a snapshot goes to one running execution, and
			// a task has at most one in flight.
			if len(a.Groups) != 1 || len(a.Groups[0].Execs) != 1 {
				e.violate("weak trigger %d to %s: want exactly one execution", a.ID, formatGroups(a.Groups))
				break
			}
			x := a.Groups[0].Execs[0]
			if e.running[x] != ExecRunning {
				e.violate("snapshot %d triggered on %s, which is not running", a.ID, x)
			}
			if id, ok := e.weakInFlight[x.Task]; ok {
				e.violate("snapshot %d triggered on %s while its snapshot %d is in flight", a.ID, x, id)
			}
			e.weakInFlight[x.Task] = a.ID
			e.triggeredFor[a.ID] = x.Task
		}
		// A sweep deletes shared files no completed checkpoint references:
		// a barrier sent before it ran would have its uploads deleted.
		for _, p := range e.pending {
			if len(a.Groups) > 0 && sweeps(p) {
				e.violate("barrier of checkpoint %d sent while a shared-file sweep is in flight", a.ID)
			}
		}
		// A JobManager restarted after a crash must never reuse an id: a
		// barrier goes out only below a durable reservation.
		if e.cfg.Reserve && len(a.Groups) > 0 && a.ID >= e.reserved && !e.reserveFailed {
			e.violate("barrier of checkpoint %d sent with ids reserved only below %d", a.ID, e.reserved)
		}
		e.triggered = append(e.triggered, a.ID)
		e.kindOf[a.ID] = a.Kind
	case LoadLatest, CopySavepoint, ReserveIDs, ProbeStorage:
		e.pending = append(e.pending, a)
	case JobEnded:
		for x := range e.running {
			if e.tms[e.where[x]] {
				e.violate("job ended while %s runs", x)
			}
		}
	}
}

func (e *env) violate(format string, args ...any) {
	e.violation = append(e.violation, fmt.Sprintf(format, args...))
}

// report sends an execution's state change as its TaskManager would.
func (e *env) report(x ExecutionID, st ExecState, err error) string {
	if st.Terminal() {
		delete(e.running, x)
		delete(e.cancelAsked, x)
	} else {
		e.running[x] = st
	}
	return e.step(StateChanged{Exec: x, State: st, Err: err})
}

// final is execution x's side of the final checkpoint.
func (e *env) final(x ExecutionID) *TaskFinal {
	f := e.finals[x]
	if f == nil {
		f = &TaskFinal{}
		e.finals[x] = f
	}
	return f
}

// told returns the executions a notification reaches: with groups (weak)
// those, else every execution alive on the TaskManagers tms, as a
// TaskExecutor tells every execution of the job it runs.
func (e *env) told(tms []TM, groups []Group) []ExecutionID {
	var out []ExecutionID
	if groups != nil {
		for _, g := range groups {
			out = append(out, g.Execs...)
		}
		return out
	}
	for _, x := range e.live(nil) {
		if slices.Contains(tms, e.where[x]) {
			out = append(out, x)
		}
	}
	return out
}

// weakTold ends snapshot id of task t once its task was told its outcome:
// only t's execution may be (none if it stopped).
func (e *env) weakTold(id checkpoint.ID, t checkpoint.TaskID, groups []Group) {
	if e.weakInFlight[t] == id {
		delete(e.weakInFlight, t)
	}
	for _, g := range groups {
		for _, x := range g.Execs {
			if x.Task != t {
				e.violate("the outcome of %d/%d's snapshot %d told to %s", t.Vertex, t.Subtask, id, x)
			}
		}
	}
}

// weakLatest is task t's newest completed snapshot, else the initial point.
func (e *env) weakLatest(t checkpoint.TaskID) *RestorePoint {
	complete := e.durable
	if e.cfg.Register {
		complete = e.registered
	}
	var newest checkpoint.ID
	for id := range complete {
		if e.triggeredFor[id] == t && id > newest {
			newest = id
		}
	}
	if newest == 0 {
		return e.cfg.Initial
	}
	return &RestorePoint{ID: newest, Own: true}
}

// weakToAck is the snapshot x was triggered for and has not acked.
func (e *env) weakToAck(x ExecutionID) (checkpoint.ID, bool) {
	id, ok := e.weakInFlight[x.Task]
	if !ok || slices.Contains(e.ackedBy[x], id) || !slices.Contains(e.triggered[e.deployedAt[x]:], id) {
		return 0, false
	}
	return id, true
}

// ack sends an ack of checkpoint id from x.
func (e *env) ack(x ExecutionID, id checkpoint.ID) string {
	if e.mayFinish[x] {
		// Told to finish, a runtime task's loop ends at once: it takes
		// no snapshot and acks nothing more.
		return "(no actions)\n"
	}
	// Only an ack of a barrier this execution could have seen (triggered
	// after its deployment) counts; the Machine must ignore any other.
	// With Config.Weak only the snapshot triggered for its task.
	if e.m.Current(x) && slices.Contains(e.triggered[e.deployedAt[x]:], id) && (!e.cfg.Weak || e.triggeredFor[id] == x.Task) {
		if e.acked[id] == nil {
			e.acked[id] = map[checkpoint.TaskID]bool{}
		}
		e.acked[id][x.Task] = true
		e.ackedBy[x] = append(e.ackedBy[x], id)
		// It acked what it snapshotted.
		e.final(x).Snapshotted(id, e.kindOf[id])
	}
	return e.step(Ack{Exec: x, ID: id, State: checkpoint.TaskState{Task: x.Task}})
}

// complete performs the first pending storage action (of kind, if not
// nil), feeding its result; err fails it.
func (e *env) complete(match func(Action) bool, err error, latest *RestorePoint) (string, bool) {
	for i, a := range e.pending {
		if match != nil && !match(a) {
			continue
		}
		e.pending = slices.Delete(e.pending, i, i+1)
		switch a := a.(type) {
		case PersistMetadata:
			if err == nil {
				e.durable[a.ID] = true
				if e.deployedDuring[a.ID] && !e.cfg.Register {
					e.violate("checkpoint %d completed after a deployment that restores an older one chose its restore point", a.ID)
				}
			}
			return e.step(StoreDone{ID: a.ID, Err: err}), true
		case RegisterCheckpoint:
			if err == nil {
				e.registered[a.ID] = true
				if e.deployedDuring[a.ID] {
					e.violate("checkpoint %d completed after a deployment that restores an older one chose its restore point", a.ID)
				}
			}
			return e.step(Registered{ID: a.ID, Err: err}), true
		case LoadLatest:
			if latest == nil {
				latest = e.latest()
			}
			return e.step(LatestLoaded{Restore: latest, Err: err}), true
		case CopySavepoint:
			path := ""
			if err == nil {
				path = fmt.Sprintf("%s/savepoint-%d", a.Target, a.ID)
			}
			return e.step(SavepointCopied{Req: a.Req, ID: a.ID, Path: path, Err: err}), true
		case Retain, Discard:
			return e.step(Swept{}), true
		case ReserveIDs:
			if err == nil {
				e.reserved, e.reserveFailed = max(e.reserved, a.UpTo), false
			} else {
				e.reserveFailed = true
			}
			return e.step(IDsReserved{UpTo: a.UpTo, Err: err}), true
		case ProbeStorage:
			return e.step(StorageProbed{Err: err}), true
		}
	}
	return "", false
}

// sweeps reports whether a is a Retain or Discard with Sweep.
func sweeps(a Action) bool {
	switch a := a.(type) {
	case Retain:
		return a.Sweep
	case Discard:
		return a.Sweep
	}
	return false
}

// latest is the newest durable checkpoint, as LoadLatest finds it; with
// Config.Register the newest registered one.
func (e *env) latest() *RestorePoint {
	complete := e.durable
	if e.cfg.Register {
		complete = e.registered
	}
	var ids []checkpoint.ID
	for id := range complete {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil
	}
	return &RestorePoint{ID: slices.Max(ids), Own: true}
}

// live returns the executions alive on live TaskManagers, sorted.
func (e *env) live(state func(ExecState) bool) []ExecutionID {
	var out []ExecutionID
	for x, st := range e.running {
		if e.tms[e.where[x]] && (state == nil || state(st)) {
			out = append(out, x)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if c := compareTaskID(out[i].Task, out[j].Task); c != 0 {
			return c < 0
		}
		return out[i].Attempt < out[j].Attempt
	})
	return out
}

// loseTM kills TaskManager tm with its executions and slots.
func (e *env) loseTM(tm TM) string {
	e.tms[tm] = false
	for l, h := range e.held {
		if h == tm {
			delete(e.held, l)
		}
	}
	for x := range e.running {
		if e.where[x] == tm {
			delete(e.running, x)
			delete(e.cancelAsked, x)
		}
	}
	return e.step(TaskManagerLost{TM: tm, Cause: fmt.Sprintf("TaskManager %d lost: no heartbeat", tm)})
}

// format prints an action on one line.
func format(a Action, now time.Time) string {
	switch a := a.(type) {
	case PrepareJob:
		return fmt.Sprintf("prepare tm=%d", a.TM)
	case Deploy:
		return fmt.Sprintf("deploy restore=%s attempt=%d: %s", a.Restore, a.Attempt, formatGroups(a.Groups))
	case CancelExecs:
		return "cancel " + formatGroups(a.Groups)
	case WeakPeers:
		s := fmt.Sprintf("weak-peers tms=%v", a.TMs)
		for _, p := range a.Moved {
			s += fmt.Sprintf(" moved=%s@tm%d", p.Exec, p.Slot.TM)
		}
		for _, t := range a.Finished {
			s += fmt.Sprintf(" finished=%d/%d", t.Vertex, t.Subtask)
		}
		return s
	case StopSources:
		return "stop-sources " + formatGroups(a.Groups)
	case TriggerCheckpoint:
		return fmt.Sprintf("trigger cp=%d kind=%s: %s", a.ID, a.Kind, formatGroups(a.Groups))
	case NotifyComplete:
		if a.Held {
			return fmt.Sprintf("complete cp=%d kind=%s HELD BACK", a.ID, a.Kind)
		}
		if a.Groups != nil {
			return fmt.Sprintf("complete cp=%d kind=%s tms=%v: %s", a.ID, a.Kind, a.TMs, formatGroups(a.Groups))
		}
		return fmt.Sprintf("complete cp=%d kind=%s tms=%v", a.ID, a.Kind, a.TMs)
	case NotifyAborted:
		s := fmt.Sprintf("aborted cp=%d tms=%v: %s", a.ID, a.TMs, a.Reason)
		if a.Groups != nil {
			s = fmt.Sprintf("aborted cp=%d tms=%v %s: %s", a.ID, a.TMs, formatGroups(a.Groups), a.Reason)
		}
		if a.Subsumed {
			s += " (subsumed)"
		}
		if a.Cause == coordinator.CauseStorage {
			s += " [storage]"
		}
		return s
	case ProbeStorage:
		return "probe-storage"
	case StorageAlert:
		return fmt.Sprintf("storage-alert failures=%d: %s", a.Failures, a.Reason)
	case StorageRecovered:
		return fmt.Sprintf("storage-recovered failures=%d", a.Failures)
	case PersistMetadata:
		return fmt.Sprintf("persist cp=%d kind=%s", a.ID, a.Kind)
	case RegisterCheckpoint:
		return fmt.Sprintf("register cp=%d kind=%s", a.ID, a.Kind)
	case LoadLatest:
		return "load-latest"
	case CopySavepoint:
		return fmt.Sprintf("copy-savepoint req=%d cp=%d target=%s", a.Req, a.ID, a.Target)
	case Retain:
		if a.Sweep {
			return fmt.Sprintf("retain cp=%d sweep", a.ID)
		}
		return fmt.Sprintf("retain cp=%d", a.ID)
	case Discard:
		s := fmt.Sprintf("discard cp=%v", a.IDs)
		if a.Aborted {
			s += " aborted"
		}
		if a.Sweep {
			s += " sweep"
		}
		return s
	case SweepShared:
		return "sweep-shared"
	case ReserveIDs:
		return fmt.Sprintf("reserve-ids up-to=%d", a.UpTo)
	case Answer:
		s := fmt.Sprintf("answer req=%d cp=%d", a.Req, a.ID)
		if a.Path != "" {
			s += " path=" + a.Path
		}
		if a.Err != nil {
			s += " err=" + a.Err.Error()
		}
		return s
	case Failure:
		return "failure: " + a.Cause
	case ReleaseJob:
		return fmt.Sprintf("release tms=%v", a.TMs)
	case JobEnded:
		if a.Err != nil {
			return fmt.Sprintf("job-ended %s: %v", a.State, a.Err)
		}
		return fmt.Sprintf("job-ended %s", a.State)
	}
	return fmt.Sprintf("%T", a)
}

func formatGroups(gs []Group) string {
	if len(gs) == 0 {
		return "(none)"
	}
	var parts []string
	for _, g := range gs {
		var xs []string
		for _, x := range g.Execs {
			xs = append(xs, x.String())
		}
		parts = append(parts, fmt.Sprintf("tm%d[%s]", g.TM, strings.Join(xs, " ")))
	}
	return strings.Join(parts, " ")
}

var errBoom = errors.New("boom")
