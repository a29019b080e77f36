package state

import (
	"encoding/binary"
	"fmt"

	"github.com/weirstream/weir/internal/codec"
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

// Timers are the processing-time timers of a keyed backend, one set per
// (key, timestamp), snapshotted with the key groups like keyed state. Like
// the backend, they are used only from the task goroutine.
type Timers[K comparable] struct {
	b    *KeyedBackend[K]
	core *core[timerKey[K], struct{}]
	heap []timerEntry[K]
	seq  uint64
	n    int // registered timers; len(heap) minus n entries are stale
}

func newTimers[K comparable](b *KeyedBackend[K]) *Timers[K] {
	c := &core[timerKey[K], struct{}]{
		name: "", kind: kindTimers, desc: kindTimers.String(),
		tab: newTable[timerKey[K], struct{}](b.cow, b.kgs.Len()),
		encK: func(dst []byte, t timerKey[K]) []byte {
			return binary.AppendVarint(b.keys.Append(dst, t.key), t.ts)
		},
		decK: func(src []byte) (timerKey[K], int, error) {
			k, n, err := b.keys.Decode(src)
			if err != nil {
				return timerKey[K]{}, 0, err
			}
			ts, m := binary.Varint(src[n:])
			if m <= 0 {
				return timerKey[K]{}, 0, fmt.Errorf("timer timestamp: bad varint: %w", codec.ErrCorrupt)
			}
			return timerKey[K]{key: k, ts: ts}, n + m, nil
		},
		encS: func(dst []byte, _ struct{}) []byte { return dst },
		decS: func([]byte) (struct{}, int, error) { return struct{}{}, 0, nil },
	}
	return &Timers[K]{b: b, core: c}
}

// Register adds a timer at ts (unix milliseconds) for the current key. A
// timer already registered for the same key and timestamp is not duplicated.
func (t *Timers[K]) Register(ts int64) {
	b := t.b
	tk := timerKey[K]{key: b.key, ts: ts}
	if _, ok := t.core.tab.get(b.cur, tk); ok {
		return
	}
	t.core.tab.mut(b.cur)[tk] = struct{}{}
	t.n++
	t.push(timerEntry[K]{ts: ts, kg: b.cur + b.kgs.Start, key: b.key})
}

// Delete removes the current key's timer at ts, if registered.
func (t *Timers[K]) Delete(ts int64) {
	tk := timerKey[K]{key: t.b.key, ts: ts}
	if _, ok := t.core.tab.get(t.b.cur, tk); !ok {
		return
	}
	t.core.tab.remove(t.b.cur, tk)
	t.n--
	// Stale entries are dropped lazily; rebuild before they dominate, so
	// register-and-delete churn keeps the heap bounded.
	if len(t.heap) > 2*t.n+64 {
		t.rebuild()
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
		i := e.kg - t.b.kgs.Start
		t.core.tab.remove(i, timerKey[K]{key: e.key, ts: e.ts})
		t.n--
		t.b.key, t.b.cur = e.key, i
		fn(e.key, e.kg, e.ts)
	}
}

// live reports whether e's timer is still registered.
func (t *Timers[K]) live(e *timerEntry[K]) bool {
	_, ok := t.core.tab.get(e.kg-t.b.kgs.Start, timerKey[K]{key: e.key, ts: e.ts})
	return ok
}

// rebuild recreates the heap from the registered timers, dropping stale
// entries; used after a restore and when stale entries pile up.
func (t *Timers[K]) rebuild() {
	t.heap = t.heap[:0]
	t.n = 0
	for i := range t.core.tab.groups {
		for tk := range t.core.tab.groups[i].m {
			t.push(timerEntry[K]{ts: tk.ts, kg: i + t.b.kgs.Start, key: tk.key})
			t.n++
		}
	}
}

func (t *Timers[K]) push(e timerEntry[K]) {
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
}

func (t *Timers[K]) pop() timerEntry[K] {
	h := t.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = timerEntry[K]{} // drop the key reference
	h = h[:last]
	for i := 0; ; {
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
	t.heap = h
	return top
}
