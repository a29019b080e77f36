// Package datagen is a replayable source whose records are a pure function
// of their index: record i is gen(i). Each subtask emits the indexes it
// owns in increasing order and keeps the next index as operator state, so a
// restore replays exactly the records after the checkpoint.
//
// The positions are union state: after a restore every subtask sees every
// old subtask's position. That makes a change of parallelism exact: a new
// subtask emits the indexes it now owns, skipping those the old owner had
// emitted before the checkpoint, until its scan has passed every old
// position.
//
// Owns: the generator source and its position state. Must not touch: the
// runtime (it is a weir.Source like any user's).
package datagen

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/weirstream/weir"
)

// Option configures a Source; pass them to New.
type Option struct {
	apply func(*options)
}

type options struct {
	count  int64
	rate   float64
	owner  func(i int64, parallelism int) int
	period int64
	now    func() time.Time
	sleep  func(time.Duration)
}

// WithCount bounds the source to indexes [0, n); 0 means unbounded.
func WithCount(n int64) Option { return Option{func(o *options) { o.count = n }} }

// WithRate limits the source to r records per second over all subtasks; 0
// means as fast as possible.
func WithRate(r float64) Option { return Option{func(o *options) { o.rate = r }} }

// WithOwner decides which subtask emits index i. The default is i mod
// parallelism. A job whose per-key order matters makes every key's indexes
// belong to one subtask (e.g. key(i) mod parallelism): then each key's
// records flow through one FIFO path, in index order. It must be a pure
// function of (i, parallelism).
func WithOwner(f func(i int64, parallelism int) int) Option {
	return Option{func(o *options) { o.owner = f }}
}

// WithOwnerPeriod declares that the owner function (WithOwner) depends only
// on i mod k. Each subtask then steps straight from one of its indexes to the next
// through a table of the residues it owns, instead of asking the owner of
// every index (which makes every subtask scan all indexes). The table takes
// 4 bytes per owned residue; a period above 2^32 is served without it.
func WithOwnerPeriod(k int64) Option { return Option{func(o *options) { o.period = k }} }

// Source generates records.
type Source[T any] struct {
	gen  func(i int64) T
	opts options

	subtask, parallelism int
	next                 int64 // next index to consider
	// floor holds the positions of a checkpoint taken at another
	// parallelism while this subtask's scan has not passed all of them:
	// index i was emitted before the checkpoint iff i < the Next of the
	// position of i's owner at that parallelism.
	floor    []Position
	floorMax int64
	pos      *weir.OperatorList[Position]
	started  time.Time
	emitted  int64
	// residues are the i mod period this subtask owns, ascending (with
	// WithOwnerPeriod); ri indexes the residue of next. uint32 halves the
	// table, which at 10 M keys was the job's largest allocation after
	// the keyed state (issue 18's memory measurements).
	residues []uint32
}

// New returns a factory of sources emitting gen(i) for each index i, for
// weir.FromSource.
func New[T any](gen func(i int64) T, opts ...Option) func() weir.Source[T] {
	o := options{now: time.Now, sleep: time.Sleep}
	for _, opt := range opts {
		if opt.apply != nil {
			opt.apply(&o)
		}
	}
	return func() weir.Source[T] { return &Source[T]{gen: gen, opts: o} }
}

const positionState = "datagen-position"

// maxWait bounds one rate-limit sleep inside Read.
const maxWait = 10 * time.Millisecond

// Position is one subtask's checkpointed progress: which subtask at which
// parallelism (ownership depends on both), the next index it would
// consider, and the older positions it still skips after a rescale.
type Position struct {
	Parallelism int64
	Subtask     int64
	Next        int64
	Floor       []Position
}

// owner returns the subtask that owns index i at parallelism p.
func (s *Source[T]) owner(i int64, p int) int {
	if s.opts.owner != nil {
		return s.opts.owner(i, p)
	}
	return int(i % int64(p))
}

// Open restores this subtask's position, or derives it from the positions
// of a checkpoint taken at another parallelism.
// DeclareStates lists the source's one state, each subtask's position
// in union list state, so that a restore checks it before the job runs.
func (s *Source[T]) DeclareStates() []weir.StateDecl {
	return []weir.StateDecl{weir.UnionListStateOf[Position](positionState)}
}

func (s *Source[T]) Open(ctx context.Context, rc *weir.RuntimeContext) error {
	if s.opts.count < 0 || s.opts.rate < 0 || s.opts.period < 0 {
		return fmt.Errorf("datagen: count %d, rate %g and owner period %d must not be negative", s.opts.count, s.opts.rate, s.opts.period)
	}
	s.subtask, s.parallelism = rc.Subtask(), rc.Parallelism()
	s.residues = nil
	if s.opts.owner != nil && s.opts.period > 0 && s.opts.period <= math.MaxUint32 {
		// Sized for an even share, so that the appends do not leave a
		// trail of outgrown copies behind.
		s.residues = make([]uint32, 0, s.opts.period/int64(s.parallelism)+64)
		for r := int64(0); r < s.opts.period; r++ {
			switch o := s.opts.owner(r, s.parallelism); {
			case o == s.subtask:
				s.residues = append(s.residues, uint32(r))
			case o < 0 || o >= s.parallelism:
				return fmt.Errorf("datagen: owner of index %d is subtask %d, outside [0, %d): the Owner function must return a subtask index", r, o, s.parallelism)
			}
		}
	}
	pos, err := weir.GetUnionListState[Position](rc, positionState)
	if err != nil {
		return err
	}
	s.pos = pos
	s.next, s.floor, s.floorMax = 0, nil, 0
	if s.opts.owner == nil {
		s.next = int64(s.subtask)
	}
	restored := pos.Get()
	if len(restored) == 0 {
		if rc.Restored() {
			return weir.Unrecoverable(fmt.Errorf("datagen source %q: the checkpoint has this operator but no position for it", rc.UID()))
		}
		return s.start()
	}
	if restored[0].Parallelism == int64(s.parallelism) {
		// Same parallelism: this subtask's own position is all it needs.
		// (A task's own snapshot in WEAKLY_CONSISTENT mode holds only
		// that one; a job-wide checkpoint holds every subtask's.)
		for _, p := range restored {
			if p.Subtask == int64(s.subtask) && p.Parallelism == int64(s.parallelism) {
				s.next = p.Next
				s.setFloor(p.Floor)
				return s.start()
			}
		}
		if err := checkPositions(restored); err != nil {
			return weir.Unrecoverable(fmt.Errorf("datagen source %q: %w", rc.UID(), err))
		}
		return weir.Unrecoverable(fmt.Errorf("datagen source %q: no position for subtask %d in the checkpoint", rc.UID(), s.subtask))
	}
	if err := checkPositions(restored); err != nil {
		return weir.Unrecoverable(fmt.Errorf("datagen source %q: %w", rc.UID(), err))
	}
	// Rescaled: scan from the lowest old position; skip what old owners
	// emitted.
	for _, p := range restored {
		if len(p.Floor) > 0 {
			return weir.Unrecoverable(fmt.Errorf("datagen source %q: the checkpoint was taken while an earlier change of parallelism was still being caught up with; restore it at parallelism %d, or a later checkpoint", rc.UID(), p.Parallelism))
		}
	}
	s.next = restored[0].Next
	for _, p := range restored {
		s.next = min(s.next, p.Next)
	}
	if s.opts.owner == nil {
		// The stepping fast path needs next ≡ subtask (mod parallelism).
		s.next -= s.next % int64(s.parallelism)
		s.next += int64(s.subtask)
	}
	s.setFloor(restored)
	return s.start()
}

// checkPositions verifies that restored positions form one complete set.
func checkPositions(ps []Position) error {
	p := ps[0].Parallelism
	if p < 1 || int64(len(ps)) != p {
		return fmt.Errorf("the checkpoint holds %d positions for parallelism %d", len(ps), p)
	}
	seen := make([]bool, p)
	for _, x := range ps {
		if x.Parallelism != p || x.Subtask < 0 || x.Subtask >= p || seen[x.Subtask] {
			return fmt.Errorf("the checkpoint's positions are inconsistent (%+v)", ps)
		}
		seen[x.Subtask] = true
	}
	return nil
}

func (s *Source[T]) setFloor(f []Position) {
	s.floor, s.floorMax = nil, 0
	if len(f) == 0 {
		return
	}
	s.floor = make([]Position, len(f))
	for _, p := range f {
		s.floor[p.Subtask] = p
		s.floorMax = max(s.floorMax, p.Next)
	}
}

func (s *Source[T]) start() error {
	s.started = s.opts.now()
	s.emitted = 0
	return nil
}

// emittedBefore reports whether a checkpoint at another parallelism already
// covers index i.
func (s *Source[T]) emittedBefore(i int64) bool {
	if s.floor == nil {
		return false
	}
	if i >= s.floorMax {
		s.floor = nil // passed every old position: nothing left to skip
		return false
	}
	p := len(s.floor)
	return i < s.floor[s.owner(i, p)].Next
}

// Read appends up to max records.
func (s *Source[T]) Read(ctx context.Context, dst []T, max int) ([]T, error) {
	dst, err := s.read(dst, max)
	if s.floor != nil && s.next >= s.floorMax {
		// Past every old position, whether or not this subtask emitted
		// anything on the way (one that owns no index never asks
		// emittedBefore): nothing is left to skip, and a later
		// checkpoint must not carry the floor.
		s.floor = nil
	}
	return dst, err
}

func (s *Source[T]) read(dst []T, max int) ([]T, error) {
	if s.opts.rate > 0 {
		allowed := int64(s.opts.now().Sub(s.started).Seconds()*s.opts.rate/float64(s.parallelism)) + 1 - s.emitted
		if allowed <= 0 {
			// Wait for the next record's turn, but never long: the task
			// handles checkpoint triggers and cancellation between Reads.
			wait := time.Duration(float64(time.Second) * float64(s.parallelism) / s.opts.rate)
			s.opts.sleep(min(wait, maxWait))
			return dst, nil
		}
		max = int(min(int64(max), allowed))
	}
	count := s.opts.count
	p := int64(s.parallelism)
	if s.residues != nil {
		return s.readResidues(dst, max)
	}
	if s.opts.owner == nil && s.floor == nil {
		for n := 0; n < max && (count == 0 || s.next < count); n++ {
			dst = append(dst, s.gen(s.next))
			s.next += p
		}
	} else {
		// Scan a bounded number of indexes per Read, so that a subtask that
		// owns few of them still returns to its task loop promptly.
		step := int64(1)
		if s.opts.owner == nil {
			step = p
		}
		limit := s.next + int64(max)*p*4
		for n := 0; n < max && s.next < limit && (count == 0 || s.next < count); s.next += step {
			switch o := s.owner(s.next, s.parallelism); {
			case o == s.subtask:
				if !s.emittedBefore(s.next) {
					dst = append(dst, s.gen(s.next))
					n++
				}
			case o < 0 || o >= s.parallelism:
				return dst, fmt.Errorf("datagen: owner of index %d is subtask %d, outside [0, %d): the Owner function must return a subtask index", s.next, o, s.parallelism)
			}
		}
	}
	s.emitted += int64(len(dst))
	if count != 0 && s.next >= count {
		return dst, io.EOF
	}
	return dst, nil
}

// readResidues emits the indexes this subtask owns through its residue
// table: O(1) per record.
func (s *Source[T]) readResidues(dst []T, max int) ([]T, error) {
	count, k := s.opts.count, s.opts.period
	if len(s.residues) == 0 {
		s.floor = nil // owns no index, so it skips none
		if count == 0 {
			return dst, nil // idle for good (unbounded)
		}
		s.next = count
		return dst, io.EOF
	}
	block, r := s.next/k, s.next%k
	j, _ := slices.BinarySearch(s.residues, uint32(r))
	if s.floor == nil {
		return s.readOwned(dst, max, block, j)
	}
	// Bound the owned indexes visited per Read, so that skipping what an
	// old owner emitted (after a rescale) returns to the task loop often.
	for n, visited := 0, 0; n < max && visited < 4*max; visited++ {
		if j == len(s.residues) {
			j, block = 0, block+1
		}
		i := block*k + int64(s.residues[j])
		if count != 0 && i >= count {
			s.next = count
			break
		}
		if !s.emittedBefore(i) {
			dst = append(dst, s.gen(i))
			n++
		}
		j++
		s.next = i + 1
	}
	s.emitted += int64(len(dst))
	if count != 0 && s.next >= count {
		return dst, io.EOF
	}
	return dst, nil
}

// readOwned is readResidues with nothing to skip (no floor), the steady
// state: every owned index visited is emitted, so there is no
// emittedBefore per record and no visit bound apart from max. j is the
// position in the residue table of the residue of s.next, in block.
func (s *Source[T]) readOwned(dst []T, max int, block int64, j int) ([]T, error) {
	count, k, res := s.opts.count, s.opts.period, s.residues
	n0 := len(dst)
	dst = slices.Grow(dst, max)[:n0+max]
	out := dst[n0:]
	base, next := block*k, s.next
	n := 0
	for ; n < len(out); n++ {
		if j == len(res) {
			j, base = 0, base+k
		}
		i := base + int64(res[j])
		if count != 0 && i >= count {
			next = count
			break
		}
		out[n] = s.gen(i)
		j++
		next = i + 1
	}
	dst = dst[:n0+n]
	s.next = next
	s.emitted += int64(len(dst)) // as readResidues counts
	if count != 0 && s.next >= count {
		return dst, io.EOF
	}
	return dst, nil
}

// SnapshotState records this subtask's position.
func (s *Source[T]) SnapshotState(int64) error {
	s.pos.Update([]Position{{Parallelism: int64(s.parallelism), Subtask: int64(s.subtask), Next: s.next, Floor: s.floor}})
	return nil
}

// Close does nothing.
func (s *Source[T]) Close(context.Context) error { return nil }
