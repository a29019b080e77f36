package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/reactive"
	"github.com/weirstream/weir/internal/runtime"
)

// Reactive mode (scheduler-mode: reactive; docs/rescaling.md, "Reactive
// mode"): the JobManager runs its one job on every slot. reactiveDriver is
// the IO of the rule in internal/reactive: it feeds it the slot pool's
// total when TaskManagers register or are lost and on a clock tick, the
// shape of every run of the job as it starts, and carries a rescale out:
//
//   - in place (runtime.JobControl.Rescale: a checkpoint, then the job
//     runs again at the new parallelism) when the job runs;
//   - otherwise, as after slots were lost (the job's failed region waits
//     for slots and cannot take a checkpoint), by ending the run and
//     starting the job again at the new parallelism from its newest
//     completed checkpoint, as a JobManager failover would.
//
// Every step of the rule is logged with its inputs and recorded in the
// job's status (GET /jobs/{id}/autoscaler, "reactive").
type reactiveDriver struct {
	m    *jobManager
	name string
	log  *slog.Logger
	// kick wakes the loop at once (a TaskManager registered or was lost).
	kick chan struct{}
	stop context.CancelFunc
	tick time.Duration

	mu     sync.Mutex
	mach   *reactive.Machine
	run    *managedJob // the current run
	slots  int         // the total last fed to the rule
	causes []string    // registrations and losses since then
	// pending is the rescale carried out, until a run starts or it fails.
	pending  *reactive.Rescale
	rescales int64
}

// ReactiveConfig is reactive mode's configuration of a JobManager.
type ReactiveConfig = reactive.Config

// reactiveTick is how often the rule sees the clock: a fifth of its
// shortest wait, between 50 ms and 1 s.
func reactiveTick(c reactive.Config) time.Duration {
	d := min(c.Stabilization, c.WaitTimeout) / 5
	return min(max(d, 50*time.Millisecond), time.Second)
}

// checkReactive refuses, in reactive mode, a job it cannot run: each
// error names the fix.
func (m *jobManager) checkReactive(name string, weak, autoscaled, fresh bool) error {
	if m.cfg.Reactive == nil {
		return nil
	}
	if weak {
		return fmt.Errorf("job %s: scheduler-mode reactive rescales the job from a checkpoint of every task, which execution.checkpointing.mode WEAKLY_CONSISTENT does not take: submit it with EXACTLY_ONCE or AT_LEAST_ONCE, or run it on a JobManager without scheduler-mode reactive", name)
	}
	if autoscaled {
		return fmt.Errorf("job %s: job.autoscaler.enabled and scheduler-mode reactive would both rescale the job (reactive mode runs it on every slot): leave the autoscaler off on this JobManager", name)
	}
	if !fresh {
		return nil
	}
	// The one job is claimed under m.mu: two submissions of different
	// names at once must not both pass (neither runs yet).
	m.mu.Lock()
	defer m.mu.Unlock()
	if other := m.reactiveJob; other != "" && other != name && (m.submitting[other] || m.jobs[other] != nil && !m.jobs[other].over()) {
		return fmt.Errorf("job %s: the JobManager runs in scheduler-mode reactive, which gives every slot to one job, and job %s runs: cancel it first, or submit to a JobManager without scheduler-mode reactive", name, other)
	}
	for _, j := range m.jobs {
		if j.rec.Spec.Name != name && !j.over() {
			// Recovered before reactive mode was on, or never claimed.
			return fmt.Errorf("job %s: the JobManager runs in scheduler-mode reactive, which gives every slot to one job, and job %s runs: cancel it first, or submit to a JobManager without scheduler-mode reactive", name, j.rec.Spec.Name)
		}
	}
	m.reactiveJob = name
	return nil
}

// reactiveAttach makes j the run of its job reactive mode follows,
// starting the job's driver on its first run.
func (m *jobManager) reactiveAttach(j *managedJob) error {
	name := j.rec.Spec.Name
	m.mu.Lock()
	d := m.reactives[name]
	m.mu.Unlock()
	if d == nil {
		mach, err := reactive.New(*m.cfg.Reactive)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithCancel(m.ctx)
		d = &reactiveDriver{m: m, name: name, log: m.log.With("job", name), kick: make(chan struct{}, 1), stop: cancel, mach: mach, tick: reactiveTick(*m.cfg.Reactive)}
		m.mu.Lock()
		m.reactives[name] = d
		m.mu.Unlock()
		go d.loop(ctx)
	}
	d.attach(j)
	return nil
}

// stopReactive stops the job's driver, if it has one.
func (m *jobManager) stopReactive(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d := m.reactives[name]; d != nil {
		d.stop()
		delete(m.reactives, name)
	}
}

// reactiveSlotsChanged wakes the drivers: a TaskManager registered or was
// lost (cause). It never blocks (a Dispatcher callback).
func (m *jobManager) reactiveSlotsChanged(cause string) {
	m.mu.Lock()
	ds := make([]*reactiveDriver, 0, len(m.reactives))
	for _, d := range m.reactives {
		ds = append(ds, d)
	}
	m.mu.Unlock()
	for _, d := range ds {
		d.mu.Lock()
		if len(d.causes) < 16 {
			d.causes = append(d.causes, cause)
		}
		d.mu.Unlock()
		select {
		case d.kick <- struct{}{}:
		default:
		}
	}
}

// totalSlots returns the slots of the registered TaskManagers: in reactive
// mode, with one job, the slots that job may use.
func (m *jobManager) totalSlots() (n int) {
	if d := m.dispatcher(); d != nil {
		d.WithSlotPool(func(p *SlotPool) { n = p.Total() })
	}
	return n
}

// attach records a run of the job as it starts.
func (d *reactiveDriver) attach(j *managedJob) {
	st := j.status
	rec := jobstatus.RecorderOf(st)
	rec.SetReactive()
	// The pool's lock is never taken under d.mu.
	n := d.m.totalSlots()
	d.mu.Lock()
	defer d.mu.Unlock()
	if old := d.run; old != nil && old.status != st {
		// A new run's status starts afresh: it inherits the decisions.
		_, ds := old.status.Reactive()
		for _, x := range ds {
			rec.ReactiveDecided(x)
		}
	}
	d.run = j
	if n != d.slots {
		d.slots = n
		d.step(reactive.SlotsChanged{Total: n, Why: fmt.Sprintf("%d slots as the run starts", n)})
	}
	p, pinned, maxp := j.cj.ReactiveShape()
	why := fmt.Sprintf("a run of the job started at parallelism %d", p)
	if r := d.pending; r != nil {
		d.rescales++
		why = fmt.Sprintf("rescaled from %d to %d: %s", r.From, p, r.Why)
		d.pending = nil
	}
	st.ReactiveRescales.Store(d.rescales)
	d.log.Info("reactive: job running", "parallelism", p, "min", pinned, "max", maxp, "slots", d.slots, "why", why)
	d.record(jobstatus.ReactiveDecision{At: time.Now(), Kind: "running", Parallelism: p, Slots: d.slots, Min: pinned, Max: maxp, Why: why})
	d.step(reactive.Running{Shape: reactive.Shape{Parallelism: p, Min: pinned, Max: maxp}})
}

// loop feeds the rule the slots and the clock until ctx ends.
func (d *reactiveDriver) loop(ctx context.Context) {
	t := time.NewTicker(d.tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-d.kick:
		}
		n := d.m.totalSlots()
		d.mu.Lock()
		if n != d.slots || len(d.causes) > 0 {
			why := fmt.Sprintf("slots %d → %d", d.slots, n)
			for _, c := range d.causes {
				why += "; " + c
			}
			d.causes = nil
			d.slots = n
			d.log.Info("reactive: slots changed", "slots", n, "why", why)
			d.step(reactive.SlotsChanged{Total: n, Why: why})
		} else {
			d.step(reactive.Tick{})
		}
		d.mu.Unlock()
	}
}

// step applies ev and performs the actions; d.mu is held.
func (d *reactiveDriver) step(ev reactive.Event) {
	for _, a := range d.mach.Step(time.Now(), ev) {
		st := d.mach.Status()
		switch a := a.(type) {
		case reactive.Note:
			d.log.Info("reactive: "+a.Why, "parallelism", st.Parallelism, "slots", st.Slots, "min", st.Min, "max", st.Max)
			d.record(jobstatus.ReactiveDecision{At: time.Now(), Kind: "wait", Parallelism: st.Parallelism, Slots: st.Slots, Min: st.Min, Max: st.Max, Why: a.Why})
		case reactive.Rescale:
			kind := "scale-up"
			if a.Down {
				kind = "scale-down"
			}
			d.log.Info("reactive: "+kind, "from", a.From, "to", a.To, "slots", a.Slots, "min", a.Min, "max", a.Max, "why", a.Why)
			d.record(jobstatus.ReactiveDecision{At: time.Now(), Kind: kind, From: a.From, To: a.To, Parallelism: a.From, Slots: a.Slots, Min: a.Min, Max: a.Max, Why: a.Why})
			r := a
			d.pending = &r
			go d.rescale(d.run, r)
		}
	}
}

// record adds a decision to the current run's status; d.mu is held.
func (d *reactiveDriver) record(x jobstatus.ReactiveDecision) {
	if d.run != nil {
		jobstatus.RecorderOf(d.run.status).ReactiveDecided(x)
	}
}

// rescale carries r out on run j: in place when the job runs and scales
// up, else by starting it again at r.To from its newest checkpoint.
func (d *reactiveDriver) rescale(j *managedJob, r reactive.Rescale) {
	start := time.Now()
	var err error
	if !r.Down && j.status.State() == jobstatus.StateRunning {
		var res jobstatus.RescaleResult
		res, err = j.control.Rescale(d.m.ctx, jobstatus.Rescale{Parallelism: r.To})
		if err == nil {
			d.log.Info("reactive: rescaled in place", "from", r.From, "to", r.To, "checkpoint", res.Checkpoint, "took", time.Since(start).Round(time.Millisecond))
			return // the next run attaches
		}
	} else if !j.restartAt(j.cj.ParallelismAt(r.To)) {
		err = errors.New("the run ended before it could be restarted at the new parallelism")
	} else {
		d.log.Info("reactive: run stopped to start the job again at the new parallelism from its newest checkpoint", "from", r.From, "to", r.To)
		return
	}
	d.log.Warn("reactive: rescale failed; the job goes on at its parallelism", "from", r.From, "to", r.To, "error", err)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.run != j {
		return // a newer run started meanwhile
	}
	d.pending = nil
	st := d.mach.Status()
	d.record(jobstatus.ReactiveDecision{At: time.Now(), Kind: "failed", From: r.From, To: r.To, Parallelism: st.Parallelism, Slots: st.Slots, Min: st.Min, Max: st.Max, Why: r.Why, Error: err.Error()})
	d.step(reactive.RescaleFailed{Err: err.Error()})
}

// restControl is the job's control as REST sees it.
func (j *managedJob) restControl() jobstatus.Control {
	if j.reactive {
		return reactiveControl{j.control}
	}
	return j.control
}

// reactiveControl is a reactive job's control as REST (and weir rescale)
// sees it: the slots decide its parallelism, so a rescale asked from
// outside is refused; the rule would undo it once the new run started.
type reactiveControl struct{ *runtime.JobControl }

// Rescale refuses (jobstatus.Rescaler).
func (reactiveControl) Rescale(context.Context, jobstatus.Rescale) (jobstatus.RescaleResult, error) {
	return jobstatus.RescaleResult{}, errors.New("the JobManager runs in scheduler-mode reactive: the job runs on every slot, and its parallelism follows the TaskManagers (start or stop some to change it); to set it by hand, run the job on a JobManager without scheduler-mode reactive")
}

// over reports whether j has ended (a run that a rescale replaced has
// too: m.jobs holds the new one).
func (j *managedJob) over() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

// restartAt ends j's run so that the JobManager starts the job again at
// par (by operator uid) from its newest checkpoint; false when the run
// has ended already.
func (j *managedJob) restartAt(par map[string]int) bool {
	j.mu.Lock()
	if j.runEnded {
		j.mu.Unlock()
		return false
	}
	j.restart = par
	j.mu.Unlock()
	j.cancel()
	return true
}

// takeRestart marks j's run ended and returns the parallelism it was
// ended to be restarted at (nil: none).
func (j *managedJob) takeRestart() map[string]int {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.runEnded = true
	return j.restart
}
