package jobmaster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/restart"
	"github.com/weirstream/weir/internal/testutil/coretest"
)

// TestRandomInterleavings drives Machines of random jobs with random
// interleavings of task reports, failures, TaskManager losses, storage
// completions (in order, some failing), requests and ticks, and checks on
// every action (env.perform) that:
//
//   - no two attempts of one subtask run at once (a redeployment comes
//     only after the old attempt is terminal or its TaskManager is gone);
//   - a checkpoint is persisted and completed only with an ack of every
//     task, from its current attempt;
//   - nothing is committed beyond the newest completed checkpoint: a
//     completion is notified only once its metadata is durable, and a
//     restore names a durable checkpoint;
//   - no checkpoint completes whose metadata write was in flight when a
//     deployment chose its (older) restore point;
//   - with registration (a third of the runs, some registrations
//     refused), a checkpoint is notified complete only after it was
//     registered, and a restore names a registered checkpoint (the newest);
//   - no barrier goes out while a shared-file sweep is in flight;
//   - with checkpoint-id reservation, no barrier goes out at or above the
//     durable bound (unless a reservation failed, which lets it go);
//   - the job ends with nothing running;
//   - once nothing fails any more (settle), the job ends: no region waits
//     forever for a cancel, a restart or a final checkpoint, and no
//     checkpoint expires waiting for an ack.
//
// Its simulated tasks finish as the runtime's do: on a completion their
// TaskManager is told that finishes them by TaskFinal's rule, after which
// they ack nothing more. (Finishing on any completion after an aborted
// final checkpoint, issue 31, makes seed 87 stall.)
//
// A failure names its seed; rerun one with -seed, which logs every move.
func TestRandomInterleavings(t *testing.T) {
	const steps = 400
	var total stats
	seeds := randomSeeds.Run(t, func(seed uint64) { total.add(runRandom(t, seed, steps, coretest.Single(), false)) })
	if t.Failed() || coretest.Single() {
		return
	}
	t.Logf("%d seeds: %+v", seeds, total)
	// The interleavings must reach the interesting states, or the
	// invariants prove little.
	if total.completed < seeds || total.restarts < seeds || total.finished == 0 || total.lost == 0 ||
		total.registered == 0 || total.refused == 0 {
		t.Fatalf("random runs too tame: %+v", total)
	}
}

// randomSeeds are the seeds of the random interleavings tests.
var randomSeeds = coretest.Seeds{First: 1, N: 400, Short: 50}

// stats sums what the random runs reached.
type stats struct {
	steps, completed, restarts, lost, finished, failed int
	// registered and refused count registrations (Config.Register runs).
	registered, refused int
}

func (s *stats) add(o stats) {
	s.steps += o.steps
	s.completed += o.completed
	s.restarts += o.restarts
	s.lost += o.lost
	s.finished += o.finished
	s.failed += o.failed
	s.registered += o.registered
	s.refused += o.refused
}

// TestRandomInterleavingsWeak drives random jobs in WEAKLY_CONSISTENT mode
// (Config.Weak) the same way, with the checks of env.perform for that
// mode:
//
//   - one live attempt per task, and no execution is ever cancelled while
//     the job runs: a failure restarts the failed task alone;
//   - a task failure changes no other task's attempt (checked at every
//     failure);
//   - a restarted task restores its own newest completed snapshot (else
//     the initial point), never while its own metadata write is in flight;
//     a quarter of the runs restart a whole job (Config.WeakLatest), whose
//     tasks restore an earlier run's snapshots until they have their own;
//   - every trigger goes to exactly one running execution (no barriers),
//     with at most one snapshot in flight per task, and a snapshot's
//     metadata holds that task's acked state only;
//   - a snapshot's outcome is told to its own task's execution only;
//   - with registration, a snapshot completes only once registered;
//   - the job ends once nothing fails any more.
//
// Rerun one seed with -seed and -run Weak.
func TestRandomInterleavingsWeak(t *testing.T) {
	const steps = 400
	var total stats
	seeds := randomSeeds.Run(t, func(seed uint64) { total.add(runRandom(t, seed, steps, coretest.Single(), true)) })
	if t.Failed() || coretest.Single() {
		return
	}
	t.Logf("%d seeds: %+v", seeds, total)
	if total.completed < seeds || total.restarts < seeds || total.finished < seeds/2 || total.lost == 0 ||
		total.registered == 0 || total.refused == 0 {
		t.Fatalf("random runs too tame: %+v", total)
	}
}

func runRandom(t *testing.T, seed uint64, steps int, verbose, weak bool) stats {
	r := rand.New(rand.NewPCG(seed, 0))
	// 1-3 regions of a source and a sink subtask each, or one region of
	// all-to-all pairs.
	var regions [][]checkpoint.TaskID
	p := 1 + r.IntN(3)
	if r.IntN(3) == 0 {
		var one []checkpoint.TaskID
		for i := range p {
			one = append(one, checkpoint.TaskID{Vertex: 0, Subtask: i}, checkpoint.TaskID{Vertex: 1, Subtask: i})
		}
		regions = [][]checkpoint.TaskID{one}
	} else {
		for i := range p {
			regions = append(regions, []checkpoint.TaskID{{Vertex: 0, Subtask: i}, {Vertex: 1, Subtask: i}})
		}
	}
	cfg := defaultConfig()
	cfg.Checkpoint.Interval = time.Second
	cfg.Checkpoint.MaxConcurrent = 1 + r.IntN(2)
	cfg.Checkpoint.TolerableFailures = r.IntN(3)
	cfg.Restart = restart.NewFixedDelay(1000, time.Duration(r.IntN(2))*time.Second)
	cfg.Reserve = r.IntN(2) == 0
	// A third of the runs register their checkpoints (high availability).
	// Decided by the seed, not r, so the other runs keep their moves.
	cfg.Register = seed%3 == 0
	cfg.Weak = weak
	if weak && seed%4 == 1 {
		// A quarter of the weak runs restart a whole job: most tasks
		// have a snapshot of an earlier run (Config.WeakLatest), ids
		// below FirstOwn. Drawn from their own source, so the other
		// runs keep their moves.
		rr := rand.New(rand.NewPCG(seed, 1))
		cfg.WeakLatest = map[checkpoint.TaskID]checkpoint.ID{}
		next := checkpoint.ID(1)
		for _, rg := range regions {
			for _, t := range rg {
				if rr.IntN(3) > 0 {
					next += checkpoint.ID(1 + rr.IntN(3))
					cfg.WeakLatest[t] = next
				}
			}
		}
		cfg.FirstOwn, cfg.FirstAttempt = next+1, 1
	}
	var e *env
	if r.IntN(2) == 0 {
		e = newEnv(cfg, regions, 1+r.IntN(2), false, nil)
	} else {
		slots := []int{p, p, p}
		e = newEnv(cfg, regions, 0, true, slots)
	}
	// Half the runs keep sweeps pending in storage, in order with the
	// other storage actions, as the driver's worker performs them.
	e.manualSweep = r.IntN(2) == 0
	log := func(cmd string, out string) {
		if verbose {
			t.Logf("%s\n%s", cmd, out)
		}
	}
	log("deploy", e.step(Start{}))
	if len(e.cfg.TaskManagers) > 0 {
		log("prepared", e.step(Prepared{}))
	}
	var st stats
	for i := 0; i < steps && !e.m.Ended(); i++ {
		cmd, out := randomMove(r, e)
		log(cmd, out)
		st.steps++
		if len(e.violation) > 0 {
			t.Fatalf("seed %d step %d (%s): invariant violated: %v (rerun with -seed=%d)", seed, i, cmd, e.violation, seed)
		}
		if strings.HasPrefix(cmd, "tm-lost") {
			st.lost++
		}
	}
	if !e.m.Ended() {
		log("settle", settle(e))
		if len(e.violation) > 0 {
			t.Fatalf("seed %d settling: invariant violated: %v (rerun with -seed=%d)", seed, e.violation, seed)
		}
		if !e.m.Ended() {
			t.Fatalf("seed %d: the job did not end once nothing failed any more:\n%s(rerun with -seed=%d)", seed, e.state(), seed)
		}
	}
	st.completed = len(e.durable)
	if e.cfg.Register {
		st.completed = len(e.registered)
		st.registered = len(e.registered)
		st.refused = e.refused
	}
	st.restarts = e.m.Restarts()
	switch e.m.State() {
	case JobFinished:
		st.finished++
	case JobFailed:
		st.failed++
	}
	return st
}

// randomMove makes one move that the fake cluster may make now.
func randomMove(r *rand.Rand, e *env) (string, string) {
	live := e.live(nil)
	pick := func(xs []ExecutionID) ExecutionID { return xs[r.IntN(len(xs))] }
	for {
		switch r.IntN(16) {
		case 0, 1:
			if xs := e.live(func(s ExecState) bool { return s == ExecDeploying }); len(xs) > 0 {
				x := pick(xs)
				return "running " + x.String(), e.report(x, ExecRunning, nil)
			}
		case 2, 3, 4:
			if len(live) > 0 && len(e.triggered) > 0 {
				x := pick(live)
				id := e.triggered[len(e.triggered)-1-r.IntN(min(2, len(e.triggered)))]
				if own, ok := e.weakToAck(x); ok && r.IntN(4) != 0 {
					id = own // weak: mostly its own snapshot, else a stray id
				}
				return fmt.Sprintf("ack %s cp=%d", x, id), e.ack(x, id)
			}
		case 5:
			if len(live) > 0 && len(e.triggered) > 0 && r.IntN(4) == 0 {
				x := pick(live)
				id := e.triggered[len(e.triggered)-1]
				if own, ok := e.weakToAck(x); ok {
					id = own
				}
				return fmt.Sprintf("decline %s cp=%d", x, id), e.step(Decline{Exec: x, ID: id, Reason: "random"})
			}
		case 6:
			if len(live) > 0 {
				x := pick(live)
				e.eodSent[x] = true
				return "eod " + x.String(), e.step(EndOfData{Exec: x})
			}
		case 7:
			if len(live) > 0 && r.IntN(3) == 0 {
				x := pick(live)
				var err error = errBoom
				if r.IntN(20) == 0 {
					err = Unrecoverable(err)
				}
				if !e.cfg.Weak {
					return "fail " + x.String(), e.report(x, ExecFailed, err)
				}
				// A task failure changes no other task's attempt.
				before := map[checkpoint.TaskID]int{}
				for _, t := range e.cfg.Tasks {
					y, _ := e.m.Exec(t)
					before[t] = y.Attempt
				}
				out := e.report(x, ExecFailed, err)
				for _, t := range e.cfg.Tasks {
					if y, _ := e.m.Exec(t); t != x.Task && y.Attempt != before[t] && !e.m.draining {
						e.violate("the failure of %s changed %s's attempt from %d", x, y, before[t])
					}
				}
				return "fail " + x.String(), out
			}
		case 8, 9:
			var asked []ExecutionID
			for _, x := range live {
				if e.cancelAsked[x] {
					asked = append(asked, x)
				}
			}
			if len(asked) > 0 {
				x := pick(asked)
				return "cancelled " + x.String(), e.report(x, ExecCanceled, nil)
			}
		case 10:
			// A task finishes as the runtime's does: once a completion
			// its TaskManager was told finished it (TaskFinal).
			var done []ExecutionID
			for _, x := range live {
				if e.mayFinish[x] {
					done = append(done, x)
				}
			}
			if len(done) > 0 {
				x := pick(done)
				return "finish " + x.String(), e.report(x, ExecFinished, nil)
			}
		case 11, 12:
			if len(e.pending) > 0 {
				var err error
				switch e.pending[0].(type) {
				case PersistMetadata:
					if r.IntN(8) == 0 {
						err = errors.New("disk full")
					}
				case RegisterCheckpoint:
					if r.IntN(6) == 0 {
						err = errors.New("not the leader any more")
						e.refused++
					}
				}
				out, _ := e.complete(nil, err, nil)
				return fmt.Sprintf("storage (err=%v)", err), out
			}
		case 13:
			d := time.Duration(100+r.IntN(2000)) * time.Millisecond
			e.now = e.now.Add(d)
			return "tick " + d.String(), e.step(Tick{})
		case 14:
			if r.IntN(4) == 0 {
				e.nextReq++
				k := RequestKind(r.IntN(3))
				if k == RequestStop && r.IntN(3) != 0 {
					k = RequestSavepoint
				}
				return "request " + k.String(), e.step(Request{Req: e.nextReq, Kind: k, Target: "/sp"})
			}
		case 15:
			if e.cluster && r.IntN(6) == 0 {
				var alive []TM
				for tm, ok := range e.tms {
					if ok {
						alive = append(alive, tm)
					}
				}
				if len(alive) > 1 {
					slices.Sort(alive)
					tm := alive[r.IntN(len(alive))]
					out := e.loseTM(tm)
					ntm := TM(len(e.tms))
					e.tms[ntm] = true
					e.slots[ntm] = 3
					return fmt.Sprintf("tm-lost %d (tm %d joins)", tm, ntm), out + e.step(SlotsOffered{})
				}
			}
			if len(live) > 0 && r.IntN(4) == 0 {
				// A late report of a superseded attempt.
				x := pick(live)
				if x.Attempt > e.cfg.FirstAttempt {
					x.Attempt--
					return "stale fail " + x.String(), e.step(StateChanged{Exec: x, State: ExecFailed, Err: errBoom})
				}
			}
		}
	}
}

// settle plays a cluster where nothing fails any more: TaskManagers
// answer cancels, deployed executions run, read to the end of their input,
// ack every checkpoint and finish as the runtime's tasks do (TaskFinal);
// storage completes and time passes. A job that still runs after that is
// stuck.
func settle(e *env) string {
	e.settling = true
	var b strings.Builder
	for i := 0; i < 600 && !e.m.Ended(); i++ {
		for _, x := range e.live(nil) {
			if e.m.Ended() {
				break
			}
			switch {
			case e.cancelAsked[x]:
				b.WriteString(e.report(x, ExecCanceled, nil))
			case e.running[x] == ExecDeploying:
				b.WriteString(e.report(x, ExecRunning, nil))
			case e.mayFinish[x]:
				// Told to finish, a task's loop ends: it acks nothing
				// more.
				b.WriteString(e.report(x, ExecFinished, nil))
			case !e.eodSent[x]:
				e.eodSent[x] = true
				b.WriteString(e.step(EndOfData{Exec: x}))
			case e.cfg.Weak:
				if id, ok := e.weakToAck(x); ok {
					b.WriteString(e.ack(x, id))
				}
			case len(e.triggered) > 0 && !slices.Contains(e.ackedBy[x], e.triggered[len(e.triggered)-1]):
				b.WriteString(e.ack(x, e.triggered[len(e.triggered)-1]))
			}
		}
		for len(e.pending) > 0 && !e.m.Ended() {
			out, _ := e.complete(nil, nil, nil)
			b.WriteString(out)
		}
		if !e.m.Ended() {
			e.now = e.now.Add(time.Second)
			b.WriteString(e.step(Tick{}))
		}
	}
	return squash(b.String())
}
