package asyncqueue

import (
	"fmt"
	"math"
)

// Mode is the order in which results leave the queue.
type Mode uint8

const (
	// Ordered emits results in input order.
	Ordered Mode = iota
	// Unordered emits results as they complete, watermarks being fences.
	Unordered
	// OrderedPerKey emits the results of one key in input order, those
	// of different keys as they complete, watermarks being fences.
	OrderedPerKey
)

func (m Mode) String() string {
	switch m {
	case Ordered:
		return "ordered"
	case Unordered:
		return "unordered"
	case OrderedPerKey:
		return "ordered-per-key"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// Entry is a record in the queue as Snapshot returns it and Restore takes
// it: its sequence number, key and input.
type Entry[I any] struct {
	Seq   uint64
	Key   uint64
	Input I
}

// Out is one thing Drain lets go downstream: a result, or a watermark
// when IsWatermark.
type Out[R any] struct {
	IsWatermark bool
	Watermark   int64
	// Seq is the sequence number of the record whose Result this is.
	Seq    uint64
	Result R
}

// slot is a record or a watermark in input order.
type slot[I, R any] struct {
	wm      bool
	ts      int64
	seq     uint64
	key     uint64
	in      I
	done    bool
	emitted bool
	res     R
}

// keyFIFO is the positions of one key's queued records in input order.
type keyFIFO struct {
	pos  []uint64
	head int
}

// Queue is the in-flight queue of one async operator subtask. It is not
// safe for concurrent use: the task goroutine owns it.
type Queue[I, R any] struct {
	mode     Mode
	capacity int

	// s[head:] are the slots not yet removed, oldest first; s[i] is at
	// absolute position base+i. Positions never repeat, so the done list
	// and the per-key FIFOs refer to slots by position across compaction.
	s    []slot[I, R]
	head int
	base uint64

	pos      map[uint64]uint64 // seq → position, for queued records
	records  int               // records queued (in flight or completed, not emitted)
	inFlight int               // records queued and not completed
	fences   []uint64          // positions of the queued watermarks, in order
	done     []uint64          // completed, not emitted records in completion order (not Ordered)
	keys     map[uint64]*keyFIFO
}

// New returns an empty queue that holds at most capacity records.
func New[I, R any](mode Mode, capacity int) *Queue[I, R] {
	if capacity < 1 {
		panic(fmt.Sprintf("asyncqueue: capacity %d, want at least 1", capacity))
	}
	if mode > OrderedPerKey {
		panic(fmt.Sprintf("asyncqueue: unknown %v", mode))
	}
	q := &Queue[I, R]{mode: mode, capacity: capacity, pos: make(map[uint64]uint64)}
	if mode == OrderedPerKey {
		q.keys = make(map[uint64]*keyFIFO)
	}
	return q
}

// Mode returns the queue's mode.
func (q *Queue[I, R]) Mode() Mode { return q.mode }

// Cap returns the queue's capacity.
func (q *Queue[I, R]) Cap() int { return q.capacity }

// Len returns the number of queued records: in flight, or completed and
// waiting for their turn.
func (q *Queue[I, R]) Len() int { return q.records }

// InFlight returns the number of queued records not completed yet.
func (q *Queue[I, R]) InFlight() int { return q.inFlight }

// Full reports whether the queue holds capacity records (or more, after a
// restore into a lower parallelism): the next Add must wait until a
// completion was drained.
func (q *Queue[I, R]) Full() bool { return q.records >= q.capacity }

// Empty reports whether nothing is queued: no record and no watermark.
func (q *Queue[I, R]) Empty() bool { return q.head == len(q.s) }

// Add queues a record with sequence number seq and key (which only
// OrderedPerKey reads). It panics when the queue is full or seq is
// queued already: the caller waits for room and numbers records uniquely.
func (q *Queue[I, R]) Add(seq, key uint64, in I) {
	if q.Full() {
		panic(fmt.Sprintf("asyncqueue: add seq %d to a full queue (%d of %d)", seq, q.records, q.capacity))
	}
	q.add(seq, key, in)
}

func (q *Queue[I, R]) add(seq, key uint64, in I) {
	if _, ok := q.pos[seq]; ok {
		panic(fmt.Sprintf("asyncqueue: seq %d added twice", seq))
	}
	p := q.base + uint64(len(q.s))
	q.s = append(q.s, slot[I, R]{seq: seq, key: key, in: in})
	q.pos[seq] = p
	q.records++
	q.inFlight++
	if q.keys != nil {
		f := q.keys[key]
		if f == nil {
			f = &keyFIFO{}
			q.keys[key] = f
		}
		f.pos = append(f.pos, p)
	}
}

// Restore queues the records of a snapshot, in order, ignoring the
// capacity: after a restore into a lower parallelism a subtask may hold
// more than it would admit, and admits nothing new until it drained below
// capacity. The caller re-issues their calls.
func (q *Queue[I, R]) Restore(entries []Entry[I]) {
	for _, e := range entries {
		q.add(e.Seq, e.Key, e.Input)
	}
}

// Complete records the result of record seq's call. It panics when seq is
// not queued or completed already: the operator completes each call once.
func (q *Queue[I, R]) Complete(seq uint64, r R) {
	p, ok := q.pos[seq]
	if !ok {
		panic(fmt.Sprintf("asyncqueue: complete seq %d, which is not queued", seq))
	}
	sl := &q.s[p-q.base]
	if sl.done {
		panic(fmt.Sprintf("asyncqueue: seq %d completed twice", seq))
	}
	sl.done, sl.res = true, r
	q.inFlight--
	if q.mode != Ordered {
		q.done = append(q.done, p)
	}
}

// Watermark queues watermark ts behind every record queued so far. A
// watermark right behind another (no record between) replaces it if
// higher, so watermarks never outnumber records by more than one.
func (q *Queue[I, R]) Watermark(ts int64) {
	if n := len(q.fences); n > 0 && q.fences[n-1] == q.base+uint64(len(q.s)-1) {
		last := &q.s[len(q.s)-1]
		last.ts = max(last.ts, ts)
		return
	}
	q.fences = append(q.fences, q.base+uint64(len(q.s)))
	q.s = append(q.s, slot[I, R]{wm: true, ts: ts})
}

// Snapshot appends the queued records, in input order, to dst.
func (q *Queue[I, R]) Snapshot(dst []Entry[I]) []Entry[I] {
	for i := q.head; i < len(q.s); i++ {
		sl := &q.s[i]
		if sl.wm || sl.emitted {
			continue
		}
		dst = append(dst, Entry[I]{Seq: sl.seq, Key: sl.key, Input: sl.in})
	}
	return dst
}

// Drain appends to dst everything that may go downstream now, in order,
// removes it from the queue and returns dst.
func (q *Queue[I, R]) Drain(dst []Out[R]) []Out[R] {
	if q.mode == Ordered {
		for q.head < len(q.s) {
			sl := &q.s[q.head]
			if !sl.wm && !sl.done {
				break
			}
			dst = q.emitHead(dst)
		}
		q.compact()
		return dst
	}
	for {
		dst = q.drainDone(dst)
		q.trim()
		if q.head == len(q.s) || !q.s[q.head].wm {
			break
		}
		// Every record before the fence left: release it, and with it
		// the records completed behind it.
		dst = q.emitHead(dst)
	}
	q.compact()
	return dst
}

// emitHead emits the slot at head (a watermark or a completed record).
func (q *Queue[I, R]) emitHead(dst []Out[R]) []Out[R] {
	sl := &q.s[q.head]
	if sl.wm {
		dst = append(dst, Out[R]{IsWatermark: true, Watermark: sl.ts})
		q.fences = q.fences[1:]
	} else {
		dst = q.emit(dst, q.base+uint64(q.head))
	}
	var zero slot[I, R]
	q.s[q.head] = zero
	q.head++
	return dst
}

// emit emits the completed record at position p and forgets it.
func (q *Queue[I, R]) emit(dst []Out[R], p uint64) []Out[R] {
	sl := &q.s[p-q.base]
	dst = append(dst, Out[R]{Seq: sl.seq, Result: sl.res})
	sl.emitted = true
	var zero I
	var zr R
	sl.in, sl.res = zero, zr
	delete(q.pos, sl.seq)
	q.records--
	if q.keys != nil {
		f := q.keys[sl.key]
		f.pos[f.head] = 0
		f.head++
		switch {
		case f.head == len(f.pos):
			delete(q.keys, sl.key)
		case f.head >= 32 && f.head >= len(f.pos)/2:
			// A key that always has records queued reuses its front.
			n := copy(f.pos, f.pos[f.head:])
			f.pos, f.head = f.pos[:n], 0
		}
	}
	return dst
}

// fence returns the position of the first queued watermark, or the
// largest position when none is queued.
func (q *Queue[I, R]) fence() uint64 {
	if len(q.fences) == 0 {
		return math.MaxUint64
	}
	return q.fences[0]
}

// drainDone emits, in completion order, the completed records before the
// first fence that the mode lets go: all of them (Unordered), or each that
// is the oldest queued record of its key, followed at once by its key's
// next ones that are completed too (OrderedPerKey).
func (q *Queue[I, R]) drainDone(dst []Out[R]) []Out[R] {
	fence := q.fence()
	kept := q.done[:0]
	for _, p := range q.done {
		sl := &q.s[p-q.base]
		if sl.emitted {
			continue // left already, after an earlier record of its key
		}
		if p > fence {
			kept = append(kept, p)
			continue
		}
		if q.keys == nil {
			dst = q.emit(dst, p)
			continue
		}
		key := sl.key
		f := q.keys[key]
		if f.pos[f.head] != p {
			kept = append(kept, p)
			continue
		}
		dst = q.emit(dst, p)
		// Its key's next records may have completed before it.
		for f = q.keys[key]; f != nil; f = q.keys[key] {
			next := f.pos[f.head]
			if next > fence || !q.s[next-q.base].done {
				break
			}
			dst = q.emit(dst, next)
		}
	}
	if q.keys != nil {
		// A record kept above may have left since, after its key's
		// predecessor: positions of emitted slots must not survive the
		// compaction that removes them.
		live := kept[:0]
		for _, p := range kept {
			if !q.s[p-q.base].emitted {
				live = append(live, p)
			}
		}
		kept = live
	}
	clear(q.done[len(kept):])
	q.done = kept
	return dst
}

// trim removes the emitted records at the head.
func (q *Queue[I, R]) trim() {
	for q.head < len(q.s) && q.s[q.head].emitted {
		q.s[q.head] = slot[I, R]{}
		q.head++
	}
}

// compact reuses the slice's front once the removed slots are most of it.
func (q *Queue[I, R]) compact() {
	q.trim()
	if q.head == len(q.s) {
		q.base += uint64(q.head)
		q.s, q.head = q.s[:0], 0
		return
	}
	if q.head >= 64 && q.head >= len(q.s)/2 {
		n := copy(q.s, q.s[q.head:])
		clear(q.s[n:])
		q.s = q.s[:n]
		q.base += uint64(q.head)
		q.head = 0
	}
}
