package lsm

import (
	"errors"

	"github.com/cockroachdb/pebble/v2"
	"github.com/weirstream/weir/internal/state"
)

// The raw handles act on the backend's current key. They go through the
// write buffer (wbuf.go); a map handle's iteration and Clear write or drop
// its buffered entries first and then work on Pebble. A handle writes its
// state id into the backend's current store key and uses that slice
// directly: Pebble copies keys and values it keeps, and reads copy the
// value out before the next call, so nothing aliases it for long.

func (b *Backend[K]) keyOf(sid uint16) []byte {
	setSID(b.cur, sid)
	return b.cur
}

// keyed reports whether a key is current: b.cur is nil until the first
// SetCurrentKey, that is in the keyed function's Open. There a read finds
// nothing and a write is refused, reported through Err
// (state.NoCurrentKey), since it belongs to no key.
func (b *Backend[K]) keyed(sid uint16, write bool) bool {
	if b.cur != nil {
		return true
	}
	if write && b.err == nil {
		name := "?"
		for n, r := range b.states {
			if r.sid == sid {
				name = n
			}
		}
		b.err = state.NoCurrentKey(name)
	}
	return false
}

// get copies key's value into b.val.
func (b *Backend[K]) get(key []byte) ([]byte, bool) {
	v, closer, err := b.db.Get(key)
	if err != nil {
		if !errors.Is(err, pebble.ErrNotFound) {
			b.fail(err)
		}
		return nil, false
	}
	b.val = append(b.val[:0], v...)
	if err := closer.Close(); err != nil {
		b.fail(err)
	}
	return b.val, true
}

func (b *Backend[K]) set(key, v []byte) {
	if err := b.db.Set(key, v, pebble.NoSync); err != nil {
		b.fail(err)
	}
}

func (b *Backend[K]) del(key []byte) {
	if err := b.db.Delete(key, pebble.NoSync); err != nil {
		b.fail(err)
	}
}

// valueHandle serves value and reducing states: one store key per key.
type valueHandle[K comparable] struct {
	b   *Backend[K]
	sid uint16
}

func (h *valueHandle[K]) Get() ([]byte, bool) {
	if !h.b.keyed(h.sid, false) {
		return nil, false
	}
	return h.b.bget(h.b.keyOf(h.sid), 0)
}

func (h *valueHandle[K]) Put(v []byte) {
	if h.b.keyed(h.sid, true) {
		h.b.bput(h.b.keyOf(h.sid), v, 0)
	}
}

func (h *valueHandle[K]) Delete() {
	if h.b.keyed(h.sid, true) {
		h.b.bdel(h.b.keyOf(h.sid), 0)
	}
}

func (h *valueHandle[K]) Fail(err error) { h.b.fail(err) }

// listHandle serves list states: one store key per key, whose value is a
// frame sequence; Append is a merge (see listMerger).
type listHandle[K comparable] struct {
	b   *Backend[K]
	sid uint16
}

func (h *listHandle[K]) Get() ([]byte, bool) {
	if !h.b.keyed(h.sid, false) {
		return nil, false
	}
	return h.b.bget(h.b.keyOf(h.sid), 0)
}

func (h *listHandle[K]) Put(frames []byte) {
	if h.b.keyed(h.sid, true) {
		h.b.bput(h.b.keyOf(h.sid), frames, 0)
	}
}

func (h *listHandle[K]) Delete() {
	if h.b.keyed(h.sid, true) {
		h.b.bdel(h.b.keyOf(h.sid), 0)
	}
}

func (h *listHandle[K]) Fail(err error) { h.b.fail(err) }

func (h *listHandle[K]) Append(frames []byte) {
	if h.b.keyed(h.sid, true) {
		h.b.bappend(h.b.keyOf(h.sid), frames)
	}
}

// mapHandle serves map states: one store key per (key, user key), under
// the key's store key as prefix.
type mapHandle[K comparable] struct {
	b   *Backend[K]
	sid uint16
}

// entry returns the store key of user key uk and the length of its
// prefix (the current key's store key).
func (h *mapHandle[K]) entry(uk []byte) ([]byte, int) {
	p := h.b.keyOf(h.sid)
	h.b.mkey = appendUserKey(append(h.b.mkey[:0], p...), uk)
	return h.b.mkey, len(p)
}

func (h *mapHandle[K]) Get(uk []byte) ([]byte, bool) {
	if !h.b.keyed(h.sid, false) {
		return nil, false
	}
	k, p := h.entry(uk)
	return h.b.bget(k, p)
}

func (h *mapHandle[K]) Put(uk, v []byte) {
	if h.b.keyed(h.sid, true) {
		k, p := h.entry(uk)
		h.b.bput(k, v, p)
	}
}

func (h *mapHandle[K]) Delete(uk []byte) {
	if h.b.keyed(h.sid, true) {
		k, p := h.entry(uk)
		h.b.bdel(k, p)
	}
}

func (h *mapHandle[K]) Fail(err error) { h.b.fail(err) }

// bounds returns the current key's entry range, copied: fn may use other
// states while an iterator holds the bounds.
func (h *mapHandle[K]) bounds() (lo, hi []byte) {
	lo = append([]byte(nil), h.b.keyOf(h.sid)...)
	return lo, prefixEnd(lo)
}

func (h *mapHandle[K]) Iterate(fn func(uk, v []byte) bool) {
	if !h.b.keyed(h.sid, false) {
		return
	}
	lo, hi := h.bounds()
	h.b.flushGroup(lo)
	it, err := h.b.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		h.b.fail(err)
		return
	}
	for valid := it.First(); valid; valid = it.Next() {
		uk, err := userKey(it.Key()[len(lo):])
		if err != nil {
			h.b.fail(err)
			break
		}
		v, err := it.ValueAndErr()
		if err != nil {
			h.b.fail(err)
			break
		}
		if !fn(uk, v) {
			break
		}
	}
	if err := it.Close(); err != nil {
		h.b.fail(err)
	}
}

// Clear deletes the key's entries with one range tombstone instead of
// reading them.
func (h *mapHandle[K]) Clear() {
	if !h.b.keyed(h.sid, true) {
		return
	}
	lo, hi := h.bounds()
	h.b.dropGroup(lo)
	if err := h.b.db.DeleteRange(lo, hi, pebble.NoSync); err != nil {
		h.b.fail(err)
	}
}
