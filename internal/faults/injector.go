package faults

import (
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
)

// Fired records one failure that fired, for the run's summary.
type Fired struct {
	// N numbers the failure within its plan, from 1.
	N int
	// Point is where it fired.
	Point Point
	// Threshold is the progress after which it was armed.
	Threshold int64
	// Progress is the cumulative progress when it fired (at least
	// Threshold).
	Progress int64
}

// String describes the failure for the summary.
func (f Fired) String() string {
	return fmt.Sprintf("failure %d at %s (armed at progress %d, fired at %d)", f.N, f.Point, f.Threshold, f.Progress)
}

// numPoints is the number of known points, one armed queue and one mask bit
// each.
const numPoints = 6

// Injector fires a Plan's failures. It is safe for concurrent use by many
// task goroutines; a nil *Injector never fires.
//
// Hot paths: Progress is one atomic add and one atomic load, Hit is one
// atomic load while its point has nothing armed. Arming and firing take mu;
// they happen once per planned failure.
type Injector struct {
	progress atomic.Int64
	// nextThreshold is the threshold of the next failure to arm, MaxInt64
	// when all are armed. Progress compares against it to avoid the lock.
	nextThreshold atomic.Int64
	// mask has the bit of every point with an armed, unfired failure.
	mask atomic.Uint32

	// held is set after a failure fired when the plan is OnePerAttempt,
	// until Release.
	held atomic.Bool
	once bool

	// crash, crashPoint and crashAt are NewCrash's: the process ends at
	// the crashAt-th Hit of crashPoint (crashHits counts them, under mu).
	crash      func(Fired)
	crashPoint Point
	crashAt    int64
	crashHits  int64

	mu       sync.Mutex
	schedule []planned
	nextArm  int              // index into schedule of the next failure to arm
	armed    [numPoints][]int // per point, schedule indexes armed and not fired, oldest first
	log      []Fired
}

// New returns an injector for plan. It panics if plan does not validate (see
// Plan.Validate).
func New(plan Plan) *Injector {
	if err := plan.Validate(); err != nil {
		panic(err)
	}
	i := &Injector{schedule: plan.schedule(), once: plan.OnePerAttempt}
	i.nextThreshold.Store(i.thresholdAt(0))
	return i
}

func (i *Injector) thresholdAt(k int) int64 {
	if k < len(i.schedule) {
		return i.schedule[k].threshold
	}
	return math.MaxInt64
}

// Progress adds n units (records, events) of progress; call it per batch.
// It arms every failure whose threshold the cumulative progress has reached.
func (i *Injector) Progress(n int64) {
	if i == nil {
		return
	}
	if p := i.progress.Add(n); p >= i.nextThreshold.Load() {
		i.arm()
	}
}

// arm moves every failure whose threshold has been reached into its point's
// queue. Two Progress calls may both get here for one threshold; the second
// finds nothing left to arm.
func (i *Injector) arm() {
	i.mu.Lock()
	defer i.mu.Unlock()
	p := i.progress.Load()
	for i.nextArm < len(i.schedule) && i.schedule[i.nextArm].threshold <= p {
		f := i.schedule[i.nextArm]
		b := bit(f.point)
		idx := bits.TrailingZeros32(b)
		i.armed[idx] = append(i.armed[idx], i.nextArm)
		i.mask.Store(i.mask.Load() | b) // writes to mask happen only under mu
		i.nextArm++
	}
	i.nextThreshold.Store(i.thresholdAt(i.nextArm))
}

// Hit reports reaching point p and returns an *InjectedError if an armed
// failure of p fires here; each planned failure fires at exactly one Hit.
// A failure armed concurrently with a Hit of its point may fire at a later
// Hit instead, which is still "the next Hit" for the task that sees it.
func (i *Injector) Hit(p Point) error {
	if i == nil {
		return nil
	}
	b := bit(p)
	if i.mask.Load()&b == 0 || i.held.Load() { // also true for an unknown point, whose bit is 0
		return nil
	}
	return i.fire(p, b)
}

// Release lets the next failure fire after one fired under a OnePerAttempt
// plan. The runtime calls it when it starts an attempt.
func (i *Injector) Release() {
	if i == nil {
		return
	}
	i.held.Store(false)
}

// fire takes the oldest armed failure of p, if another Hit has not taken it
// between the mask load and the lock.
func (i *Injector) fire(p Point, b uint32) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.crash != nil {
		return i.crashHit(p)
	}
	idx := bits.TrailingZeros32(b)
	q := i.armed[idx]
	if len(q) == 0 || i.held.Load() {
		return nil
	}
	if i.once {
		i.held.Store(true)
	}
	f := i.schedule[q[0]]
	i.armed[idx] = q[1:]
	if len(i.armed[idx]) == 0 {
		i.mask.Store(i.mask.Load() &^ b)
	}
	i.log = append(i.log, Fired{N: f.n, Point: f.point, Threshold: f.threshold, Progress: i.progress.Load()})
	return &InjectedError{Point: p, N: f.n}
}

// Fired returns how many failures have fired.
func (i *Injector) Fired() int {
	if i == nil {
		return 0
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return len(i.log)
}

// Remaining returns how many planned failures have not fired yet, armed or
// not.
func (i *Injector) Remaining() int {
	if i == nil {
		return 0
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return len(i.schedule) - len(i.log)
}

// Log returns the failures that fired, in firing order.
func (i *Injector) Log() []Fired {
	if i == nil {
		return nil
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return append([]Fired(nil), i.log...)
}
