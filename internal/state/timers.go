package state

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/keygroup"
)

// timerKey is one registered timer: a key and a timestamp. The set of them
// per key group is what snapshots hold; the heap is derived from it.
type timerKey[K comparable] struct {
	key K
	ts  int64
}

// timerEntry is a heap element. Entries whose timer was deleted stay in the
// heap until they reach the top (lazy deletion), and are skipped there.
type timerEntry[K comparable] struct {
	ts  int64
	kg  int
	seq uint64 // registration order, for a stable order among equal (ts, kg)
	key K
}

func (a *timerEntry[K]) less(b *timerEntry[K]) bool {
	if a.ts != b.ts {
		return a.ts < b.ts
	}
	if a.kg != b.kg {
		return a.kg < b.kg
	}
	return a.seq < b.seq
}

// TimeDomain tells a backend's two timer sets apart: processing-time
// timers fire as the task's clock passes them, event-time timers as the
// watermark does. The backend does not know either time: the caller passes
// it to PopDue.
type TimeDomain uint8

const (
	// ProcessingTime timers: PopDue(now) with the processing clock.
	ProcessingTime TimeDomain = iota
	// EventTime timers: PopDue(watermark).
	EventTime
)

func (d TimeDomain) String() string {
	if d == EventTime {
		return "event time"
	}
	return "processing time"
}

// kind is the snapshot section kind of the domain's timers.
func (d TimeDomain) kind() Kind {
	if d == EventTime {
		return KindEventTimers
	}
	return KindTimers
}

// Timers are one timer set of a keyed backend (its processing-time or its
// event-time timers), one timer per (key, timestamp), snapshotted with the
// key groups like keyed state. The two sets of a backend are independent:
// each has its own queue and its own snapshot section. Like the backend,
// they are used only from the task goroutine. Both backends keep them in
// memory: see the package doc for why.
type Timers[K comparable] struct {
	domain TimeDomain
	kgs    keygroup.Range
	core   *core[timerKey[K], uint64]
	heap   []timerEntry[K]
	seq    uint64
	n      int // registered timers; len(heap) minus n entries are stale
	// current returns the backend's current key and its key group;
	// setCurrent makes a firing timer's key the current one.
	current    func() (K, int)
	setCurrent func(K, int)
}

// NewTimers returns an empty timer set of domain d for a backend other
// than the heap one: current and setCurrent read and set that backend's
// current key and key group. Their snapshots (SnapshotSection) copy on
// write like the heap backend's state.
func NewTimers[K comparable](keys codec.Codec[K], kgs keygroup.Range, d TimeDomain, current func() (K, int), setCurrent func(K, int)) *Timers[K] {
	return newTimers(keys, kgs, d, &cow{}, keyHasher[K](), current, setCurrent)
}

// timerHash hashes a timer by its key's hash and its timestamp.
func timerHash[K comparable](hash func(K) uint32) func(timerKey[K]) uint32 {
	return func(t timerKey[K]) uint32 { return hash(t.key) ^ uint32(uint64(t.ts)*0x9E3779B97F4A7C15>>32) }
}

func newTimers[K comparable](keys codec.Codec[K], kgs keygroup.Range, d TimeDomain, c *cow, hash func(K) uint32, current func() (K, int), setCurrent func(K, int)) *Timers[K] {
	// The table maps each registered timer to the sequence number of its
	// queue entry; entries whose number differs are stale (see live).
	tc := &core[timerKey[K], uint64]{
		name: "", kind: d.kind(), desc: d.kind().String(),
		tab: newTable[timerKey[K], uint64](c, timerHash(hash), kgs.Len()),
		encK: func(dst []byte, t timerKey[K]) []byte {
			return binary.AppendVarint(keys.Append(dst, t.key), t.ts)
		},
		decK: func(src []byte) (timerKey[K], int, error) {
			k, n, err := keys.Decode(src)
			if err != nil {
				return timerKey[K]{}, 0, err
			}
			ts, m := binary.Varint(src[n:])
			if m <= 0 {
				return timerKey[K]{}, 0, fmt.Errorf("timer timestamp: bad varint: %w", codec.ErrCorrupt)
			}
			return timerKey[K]{key: k, ts: ts}, n + m, nil
		},
		// The sequence number is not snapshotted: rebuild renumbers.
		encS: func(dst []byte, _ uint64, _ *entrySorter) []byte { return dst },
		decS: func([]byte) (uint64, int, error) { return 0, 0, nil },
	}
	return &Timers[K]{domain: d, kgs: kgs, core: tc, current: current, setCurrent: setCurrent}
}

// SnapshotSection captures the timers for a snapshot of a backend other
// than the heap one; call release once the section was written. Like the
// heap backend's Snapshot it copies nothing now and clones a key group's
// set on its first change while a snapshot is live.
func (t *Timers[K]) SnapshotSection() (sec Section, release func()) {
	c := t.core.tab.cow
	c.epoch++
	c.live.Add(1)
	var once sync.Once
	sec = &heapSection{kind: t.domain.kind(), kgs: t.kgs, f: t.core.freeze(0)}
	return sec, func() { once.Do(func() { c.live.Add(-1) }) }
}

// RestoreGroup adds the timers of key group kg's canonical payload, for a
// backend other than the heap one; call Rebuild after the last.
func (t *Timers[K]) RestoreGroup(kg int, payload []byte) error {
	return t.core.restoreGroup(kg-t.kgs.Start, payload)
}

// Rebuild recreates the timer queue after RestoreGroup calls.
func (t *Timers[K]) Rebuild() { t.rebuild() }

// Domain is the time domain of the set: which time PopDue is given.
func (t *Timers[K]) Domain() TimeDomain { return t.domain }

// Register adds a timer at ts (unix milliseconds) for the current key. A
// timer already registered for the same key and timestamp is not duplicated.
func (t *Timers[K]) Register(ts int64) {
	key, kg := t.current()
	i := kg - t.kgs.Start
	tk := timerKey[K]{key: key, ts: ts}
	p, ok := t.core.tab.slot(i, tk, t.core.tab.hash(tk))
	if ok {
		return
	}
	t.n++
	*p = t.push(timerEntry[K]{ts: ts, kg: kg, key: key})
}

// Delete removes the current key's timer at ts, if registered.
func (t *Timers[K]) Delete(ts int64) {
	key, kg := t.current()
	i := kg - t.kgs.Start
	tk := timerKey[K]{key: key, ts: ts}
	h := t.core.tab.hash(tk)
	if !t.core.tab.has(i, tk, h) {
		return
	}
	t.core.tab.remove(i, tk, h)
	t.n--
	// Stale entries are dropped lazily; compact before they dominate, so
	// register-and-delete churn keeps the heap bounded.
	if len(t.heap) > 2*t.n+64 {
		t.compact()
	}
}

// Len is the number of registered timers.
func (t *Timers[K]) Len() int { return t.n }

// Next returns the earliest registered timestamp, or false if none.
func (t *Timers[K]) Next() (int64, bool) {
	for len(t.heap) > 0 {
		if t.live(&t.heap[0]) {
			return t.heap[0].ts, true
		}
		t.pop()
	}
	return 0, false
}

// PopDue removes every timer with a timestamp at or before now and calls fn
// for each, in timestamp order (ties: key group, then registration order).
// now is the processing time for processing-time timers and the watermark
// for event-time timers: a timer at ts fires once the watermark reaches ts.
// A checkpoint holds no registration order: restored timers count as
// registered in the order of their encoded keys (see rebuild).
// Before each call it makes the timer's key the backend's current key, so
// fn can use keyed state directly. fn may register and delete timers; one
// it registers at or before now fires within this call, so a timer that
// always re-registers itself at now would never let PopDue return.
func (t *Timers[K]) PopDue(now int64, fn func(key K, kg int, ts int64)) {
	for len(t.heap) > 0 && t.heap[0].ts <= now {
		e := t.pop()
		if !t.live(&e) {
			continue
		}
		i := e.kg - t.kgs.Start
		tk := timerKey[K]{key: e.key, ts: e.ts}
		t.core.tab.remove(i, tk, t.core.tab.hash(tk))
		t.n--
		t.setCurrent(e.key, e.kg)
		fn(e.key, e.kg, e.ts)
	}
}

// live reports whether e's timer is still registered and e is its queue
// entry (not one left by an earlier registration that was deleted).
func (t *Timers[K]) live(e *timerEntry[K]) bool {
	tk := timerKey[K]{key: e.key, ts: e.ts}
	seq, ok := t.core.tab.get(e.kg-t.kgs.Start, tk, t.core.tab.hash(tk))
	return ok && seq == e.seq
}

// compact drops the stale entries of the queue, keeping the live ones and
// their registration order.
func (t *Timers[K]) compact() {
	h := t.heap[:0]
	for _, e := range t.heap {
		if t.live(&e) {
			h = append(h, e)
		}
	}
	clear(t.heap[len(h):]) // drop the key references
	t.heap = h
	for i := len(h)/2 - 1; i >= 0; i-- {
		t.down(i)
	}
}

// rebuild recreates the queue from the registered timers after a restore.
// A checkpoint does not hold registration order, so the restored timers
// are numbered in a deterministic order instead: by timestamp, key group
// and encoded key. Equal (timestamp, key group) timers restored from a
// checkpoint thus fire in the order of their encoded keys, before any
// registered after the restore.
func (t *Timers[K]) rebuild() {
	type ent struct {
		e   timerEntry[K]
		enc []byte
	}
	var all []ent
	for i := range t.core.tab.groups {
		t.core.tab.groups[i].each(func(tk timerKey[K], _ uint64) bool {
			all = append(all, ent{timerEntry[K]{ts: tk.ts, kg: i + t.kgs.Start, key: tk.key}, t.core.encK(nil, tk)})
			return true
		})
	}
	slices.SortFunc(all, func(a, b ent) int {
		if c := cmp.Compare(a.e.ts, b.e.ts); c != 0 {
			return c
		}
		if c := cmp.Compare(a.e.kg, b.e.kg); c != 0 {
			return c
		}
		return bytes.Compare(a.enc, b.enc)
	})
	clear(t.heap)
	t.heap = t.heap[:0]
	t.n = len(all)
	for _, a := range all {
		tk := timerKey[K]{key: a.e.key, ts: a.e.ts}
		t.core.tab.set(a.e.kg-t.kgs.Start, tk, t.core.tab.hash(tk), t.push(a.e))
	}
}

// push adds e to the queue with the next sequence number, which it returns.
func (t *Timers[K]) push(e timerEntry[K]) uint64 {
	t.seq++
	e.seq = t.seq
	t.heap = append(t.heap, e)
	h := t.heap
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].less(&h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return e.seq
}

func (t *Timers[K]) pop() timerEntry[K] {
	h := t.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = timerEntry[K]{} // drop the key reference
	t.heap = h[:last]
	t.down(0)
	return top
}

// down moves the entry at i down the heap to its place.
func (t *Timers[K]) down(i int) {
	h := t.heap
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].less(&h[m]) {
			m = l
		}
		if r < len(h) && h[r].less(&h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
