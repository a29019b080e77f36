// Package datagen is a replayable source whose records are a pure function
// of their index: record i is gen(i). Each subtask emits the indexes it
// owns in increasing order and keeps the next index as operator state, so a
// restore replays exactly the records after the checkpoint.
package datagen

import (
	"fmt"
	"io"
	"time"

	"github.com/weirstream/weir"
)

// Option configures a Source.
type Option func(*options)

type options struct {
	count int64
	rate  float64
	owner func(i int64, parallelism int) int
	now   func() time.Time
	sleep func(time.Duration)
}

// Count bounds the source to indexes [0, n); 0 means unbounded.
func Count(n int64) Option { return func(o *options) { o.count = n } }

// Rate limits the source to r records per second over all subtasks; 0 means
// as fast as possible.
func Rate(r float64) Option { return func(o *options) { o.rate = r } }

// Owner decides which subtask emits index i. The default is i mod
// parallelism. A job whose per-key order matters makes every key's indexes
// belong to one subtask (e.g. key(i) mod parallelism): then each key's
// records flow through one FIFO path, in index order.
func Owner(f func(i int64, parallelism int) int) Option { return func(o *options) { o.owner = f } }

// Source generates records.
type Source[T any] struct {
	gen  func(i int64) T
	opts options

	subtask, parallelism int
	next                 int64 // next index to consider
	pos                  *weir.OperatorList[Position]
	started              time.Time
	emitted              int64
}

// New returns a factory of sources emitting gen(i) for each index i, for
// weir.FromSource.
func New[T any](gen func(i int64) T, opts ...Option) func() weir.Source[T] {
	o := options{now: time.Now, sleep: time.Sleep}
	for _, opt := range opts {
		opt(&o)
	}
	return func() weir.Source[T] { return &Source[T]{gen: gen, opts: o} }
}

const positionState = "datagen-position"

// maxWait bounds one rate-limit sleep inside Read.
const maxWait = 10 * time.Millisecond

// Position is a subtask's checkpointed progress. The parallelism is kept
// because which indexes a subtask owns depends on it: a position taken at
// another parallelism means nothing, and restoring it would emit wrong
// records.
type Position struct {
	Parallelism int64
	Next        int64
}

// Open restores the next index of this subtask.
func (s *Source[T]) Open(ctx *weir.Context) error {
	if s.opts.count < 0 || s.opts.rate < 0 {
		return fmt.Errorf("datagen: count %d and rate %g must not be negative", s.opts.count, s.opts.rate)
	}
	s.subtask, s.parallelism = ctx.Subtask(), ctx.Parallelism()
	pos, err := weir.GetOperatorListState[Position](ctx, positionState)
	if err != nil {
		return err
	}
	s.pos = pos
	s.next = int64(s.subtask)
	if s.opts.owner != nil {
		s.next = 0
	}
	restored := pos.Get()
	switch {
	case len(restored) == 1 && restored[0].Parallelism == int64(s.parallelism):
		s.next = restored[0].Next
	case len(restored) > 0 || ctx.Restored():
		what := "no position (it was taken at a lower parallelism)"
		if len(restored) > 0 {
			what = fmt.Sprintf("%d position(s) taken at parallelism %d", len(restored), restored[0].Parallelism)
		}
		return weir.Unrecoverable(fmt.Errorf("datagen source %q: the checkpoint holds %s for subtask %d, but the source now runs with parallelism %d: datagen cannot change its parallelism on restore; run it with the parallelism of the checkpoint", ctx.UID(), what, s.subtask, s.parallelism))
	}
	s.started = s.opts.now()
	s.emitted = 0
	return nil
}

// Read appends up to max records.
func (s *Source[T]) Read(dst []T, max int) ([]T, error) {
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
	if s.opts.owner == nil {
		p := int64(s.parallelism)
		for n := 0; n < max && (count == 0 || s.next < count); n++ {
			dst = append(dst, s.gen(s.next))
			s.next += p
		}
	} else {
		// Scan a bounded number of indexes per Read, so that a subtask that
		// owns few of them still returns to its task loop promptly.
		limit := s.next + int64(max)*int64(s.parallelism)*4
		for n := 0; n < max && s.next < limit && (count == 0 || s.next < count); s.next++ {
			switch o := s.opts.owner(s.next, s.parallelism); {
			case o == s.subtask:
				dst = append(dst, s.gen(s.next))
				n++
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

// SnapshotState records the next index.
func (s *Source[T]) SnapshotState(int64) error {
	s.pos.Update([]Position{{Parallelism: int64(s.parallelism), Next: s.next}})
	return nil
}

// Close does nothing.
func (s *Source[T]) Close() error { return nil }
