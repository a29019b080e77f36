package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir"
)

// The state benchmark's job: a source that emits the phases of a
// churnSchedule when the driver releases them → key by key → a keyed
// function that writes each key's ValueState[[]byte]. The driver (one
// measured run per process, state_run.go) releases a phase, waits
// until the function processed it, takes a checkpoint and waits for its
// completion; so every checkpoint covers whole phases and nothing else.

// stateCtl connects the driver with the job's source and function
// instances. It is made per run and reaches them through the factories'
// closures.
type stateCtl struct {
	sched      churnSchedule
	valueBytes int

	mu       sync.Mutex
	released int             // highest phase the sources may emit
	gates    []chan struct{} // gates[p] is closed once phase p is released

	// phaseDone receives the phase a source subtask has finished emitting.
	phaseDone chan int
	// completed receives the ids of completed checkpoints, as sources are
	// notified of them.
	completed chan int64
	// firstOnce closes first when the function processes its first record.
	firstOnce sync.Once
	first     chan struct{}
	firstAt   atomic.Int64 // unix nanoseconds
}

func newStateCtl(sched churnSchedule, valueBytes, lastPhase, parallelism int) *stateCtl {
	c := &stateCtl{
		sched: sched, valueBytes: valueBytes, released: -1,
		gates:     make([]chan struct{}, lastPhase+1),
		phaseDone: make(chan int, 4*parallelism*(lastPhase+1)),
		completed: make(chan int64, 64),
		first:     make(chan struct{}),
	}
	for i := range c.gates {
		c.gates[i] = make(chan struct{})
	}
	return c
}

// release lets the sources emit phases up to p.
func (c *stateCtl) release(p int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ; c.released < p; c.released++ {
		close(c.gates[c.released+1])
	}
}

// gate returns the channel closed when phase p is released; nil (never
// ready) beyond the last phase.
func (c *stateCtl) gate(p int) <-chan struct{} {
	if p >= len(c.gates) {
		return nil
	}
	return c.gates[p]
}

func (c *stateCtl) markFirst() {
	c.firstOnce.Do(func() {
		c.firstAt.Store(time.Now().UnixNano())
		close(c.first)
	})
}

// statePosition is a source subtask's position: the next record of a phase.
type statePosition struct {
	Phase int64
	Next  int64
}

// stateSource emits, for phase p, the records j ≡ subtask (mod
// parallelism) of the phase, once the driver released it; in between it
// idles. It never ends: the driver cancels the job.
type stateSource struct {
	ctl      *stateCtl
	pos      *weir.OperatorList[statePosition]
	sub, par int64
	phase    int
	next     int64 // j of the next record
	reported int   // highest phase reported done
	idle     *time.Timer
}

func (s *stateSource) Open(ctx context.Context, rc *weir.RuntimeContext) error {
	pos, err := weir.GetOperatorListState[statePosition](rc, "position")
	if err != nil {
		return err
	}
	s.pos = pos
	s.sub, s.par = int64(rc.Subtask()), int64(rc.Parallelism())
	s.next, s.reported = s.sub, -1
	if p := pos.Get(); len(p) == 1 {
		s.phase, s.next = int(p[0].Phase), p[0].Next
		s.reported = s.phase - 1
	}
	s.idle = time.NewTimer(time.Hour)
	s.idle.Stop()
	return nil
}

func (s *stateSource) Read(ctx context.Context, dst []stateUpdate, max int) ([]stateUpdate, error) {
	for s.next >= s.ctl.sched.phaseLen(s.phase) {
		if s.reported < s.phase {
			s.reported = s.phase
			s.ctl.phaseDone <- s.phase // buffered for every report of a run
		}
		if !s.wait(s.ctl.gate(s.phase + 1)) {
			return dst, nil
		}
		s.phase++
		s.next = s.sub
	}
	if !s.wait(s.ctl.gate(s.phase)) {
		return dst, nil
	}
	n, v := s.ctl.sched.phaseLen(s.phase), int64(s.phase)
	for ; s.next < n && len(dst) < max; s.next += s.par {
		dst = append(dst, stateUpdate{Key: s.ctl.sched.key(s.phase, s.next), Version: v})
	}
	return dst, nil
}

// wait reports whether gate is open, waiting for it at most 1 ms: a
// checkpoint trigger is handled between two Reads, so idling longer would
// delay it.
func (s *stateSource) wait(gate <-chan struct{}) bool {
	select {
	case <-gate:
		return true
	default:
	}
	s.idle.Reset(time.Millisecond)
	select {
	case <-gate:
		s.idle.Stop()
		return true
	case <-s.idle.C:
		return false
	}
}

func (s *stateSource) SnapshotState(int64) error {
	s.pos.Update([]statePosition{{Phase: int64(s.phase), Next: s.next}})
	return nil
}

func (s *stateSource) NotifyCheckpointComplete(ctx context.Context, id int64) error {
	select {
	case s.ctl.completed <- id:
	default: // the driver reads the newest; a full queue loses nothing it needs
	}
	return nil
}

func (s *stateSource) Close(context.Context) error { return nil }

// stateFunction writes each record's value into ValueState[[]byte]. A load
// (version 0) writes blindly; an update reads the old value first, as a
// read-modify-write job does, and checks it is an older version of the
// same key, so the benchmark also verifies what it measures (a wrong
// restore fails the run).
type stateFunction struct {
	ctl   *stateCtl
	value weir.ValueState[[]byte]
	seen  bool
}

func (f *stateFunction) Open(ctx context.Context, kc *weir.KeyedContext[int64]) (err error) {
	f.value, err = weir.GetValueState[[]byte](kc, "value")
	return err
}

func (f *stateFunction) ProcessElement(r stateUpdate, _ *weir.KeyedContext[int64], _ *weir.Collector[struct{}]) error {
	if !f.seen {
		f.seen = true
		f.ctl.markFirst()
	}
	if r.Version > 0 {
		old, ok := f.value.Value()
		if !ok {
			return errMissingValue(r)
		}
		if err := checkValue(old, r.Key, r.Version, f.ctl.valueBytes); err != nil {
			return err
		}
	}
	// A fresh slice per update: the heap backend keeps the value as given
	// (internal/state: values must not be mutated after Update), and a
	// portable job cannot know which backend it runs on.
	v := make([]byte, f.ctl.valueBytes)
	fillValue(v, r.Key, r.Version)
	f.value.Update(v)
	return nil
}

func errMissingValue(r stateUpdate) error {
	return fmt.Errorf("key %d: no value before the update to version %d (lost in a checkpoint or restore)", r.Key, r.Version)
}

// buildStateJob adds the benchmark's job to env.
func buildStateJob(env *weir.Env, ctl *stateCtl) {
	src := weir.FromSource(env, func() weir.Source[stateUpdate] { return &stateSource{ctl: ctl} }).
		Name("updates").UID("updates")
	keyed := weir.KeyBy(src, func(r stateUpdate) int64 { return r.Key })
	weir.Process(keyed, func() weir.KeyedProcessFunction[int64, stateUpdate, struct{}] { return &stateFunction{ctl: ctl} }).
		Name("state").UID("state")
}
