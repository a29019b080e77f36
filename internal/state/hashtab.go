package state

import (
	"hash/maphash"
	"slices"
	"unsafe"

	"github.com/weirstream/weir/internal/keygroup"
)

// htab is the heap backend's hash table for one key group of one state: open
// addressing with linear probing over two flat arrays, a control byte and a
// slot (key and state) per position. It replaces a Go map for three
// reasons, all measured on keyed-sum (BENCHMARKS.md):
//
//   - the caller supplies the key's hash: the keyed operator has already
//     computed the key's stable hash to find its key group, so a record is
//     hashed once, not again by the map;
//   - slot returns a pointer to the state, so a read-modify-write (a list
//     append, a reducing Add, a map state's inner map) probes once;
//   - a copy-on-write clone is two memmoves, not a rehash of every entry.
//
// Control bytes are 0 for an empty position and 0x80 | 7 bits of the hash
// for a used one, so a probe compares keys only on a 1-in-128 false match.
// Deletion shifts the following entries of the probe run back (no
// tombstones), which keeps probe runs as short as if the deleted keys had
// never been inserted. The load factor is at most 13/16: at that bound a
// hit probes about 3 positions and a miss about 15 control bytes, which
// sit in one or two cache lines; after a doubling the table is 41% full,
// so a slot costs 25 bytes / 0.41..0.81 = 31..62 bytes per entry,
// against 28..57 for a Go map of the same entries (which has no room to
// store a pointer-stable slot).
//
// An htab is used by the task goroutine only; a snapshot reads a frozen
// copy of its header, which the task never writes again (cow.go).
type htab[TK comparable, S any] struct {
	ctrl  []uint8
	slots []hslot[TK, S]
	n     int
	shift uint8 // 64 - log2(len(ctrl)): the position is spread(h) >> shift
	// moves counts the changes that move or add entries (inserts, deletes,
	// growth), so that a position found earlier can be trusted while it is
	// unchanged (see valueState). A clone keeps positions and the count.
	moves uint32
}

type hslot[TK comparable, S any] struct {
	k TK
	v S
}

// minTableSize is the size of a table's first allocation.
const minTableSize = 8

// spread mixes a 32-bit hash into 64 bits (Fibonacci hashing). The keyed
// operator's hash also picks the key group, so the keys of one group share
// properties of their hash modulo the max parallelism; the multiplication
// makes the position (the top bits) and the tag (bits 24..30) depend on
// every bit of it.
// find writes it out by hand; keep the two the same.
func spread(h uint32) uint64 { return uint64(h) * 0x9E3779B97F4A7C15 }

func tagOf(p uint64) uint8 { return uint8(p>>24) | 0x80 }

// find returns the position of k, or of the empty position where it would
// go, and whether k is there.
func (t *htab[TK, S]) find(k TK, h uint32) (int, bool) {
	if len(t.ctrl) == 0 {
		return -1, false
	}
	// spread and tagOf written out: find is instantiated in the packages
	// that use a state type, where calls to this package's small helpers
	// from a generic body are not inlined (a CALL each, on every probe).
	p := uint64(h) * 0x9E3779B97F4A7C15
	tag := uint8(p>>24) | 0x80
	mask := len(t.ctrl) - 1
	i := int(p >> t.shift)
	for {
		c := t.ctrl[i]
		if c == 0 {
			return i, false
		}
		if c == tag && t.slots[i].k == k {
			return i, true
		}
		i = (i + 1) & mask
	}
}

// get returns k's state and whether k has one.
func (t *htab[TK, S]) get(k TK, h uint32) (S, bool) {
	if i, ok := t.find(k, h); ok {
		return t.slots[i].v, true
	}
	var zero S
	return zero, false
}

// slot returns a pointer to k's state, inserting the zero state if k has
// none, and whether k had one. The pointer is valid until the next insert
// or delete in t. hash is the table's hash function, for a growth.
func (t *htab[TK, S]) slot(k TK, h uint32, hash func(TK) uint32) (*S, bool) {
	i, ok := t.find(k, h)
	if ok {
		return &t.slots[i].v, true
	}
	if (t.n+1)*16 > len(t.ctrl)*13 {
		t.grow(hash)
		i, _ = t.find(k, h)
	}
	t.ctrl[i] = tagOf(spread(h))
	t.slots[i].k = k
	t.n++
	t.moves++
	return &t.slots[i].v, false
}

// grow doubles the table (or makes its first one) and reinserts every
// entry; hashes are recomputed rather than stored, which keeps a slot at
// the size of its key and state.
func (t *htab[TK, S]) grow(hash func(TK) uint32) {
	oldCtrl, oldSlots := t.ctrl, t.slots
	n := max(minTableSize, 2*len(oldCtrl))
	t.ctrl = make([]uint8, n)
	t.slots = make([]hslot[TK, S], n)
	t.shift = uint8(64 - log2(n))
	mask := n - 1
	for j, c := range oldCtrl {
		if c == 0 {
			continue
		}
		p := spread(hash(oldSlots[j].k))
		i := int(p >> t.shift)
		for t.ctrl[i] != 0 {
			i = (i + 1) & mask
		}
		t.ctrl[i] = tagOf(p)
		t.slots[i] = oldSlots[j]
	}
}

func log2(n int) int {
	b := 0
	for 1<<b < n {
		b++
	}
	return b
}

// del removes k, if present, and reports whether it was.
func (t *htab[TK, S]) del(k TK, h uint32, hash func(TK) uint32) bool {
	i, ok := t.find(k, h)
	if !ok {
		return false
	}
	mask := len(t.ctrl) - 1
	// Backward shift: move each later entry of the run whose home position
	// is not in the cyclic interval (i, j] into the hole at i.
	for j := (i + 1) & mask; t.ctrl[j] != 0; j = (j + 1) & mask {
		home := int(spread(hash(t.slots[j].k)) >> t.shift)
		if (i <= j && (home <= i || home > j)) || (i > j && home <= i && home > j) {
			t.ctrl[i], t.slots[i] = t.ctrl[j], t.slots[j]
			i = j
		}
	}
	t.ctrl[i] = 0
	t.slots[i] = hslot[TK, S]{} // drop references for the GC
	t.n--
	t.moves++
	return true
}

// clone returns a copy sharing nothing with t that a write may change.
func (t *htab[TK, S]) clone() htab[TK, S] {
	return htab[TK, S]{ctrl: slices.Clone(t.ctrl), slots: slices.Clone(t.slots), n: t.n, shift: t.shift, moves: t.moves}
}

// each calls fn for every entry until it returns false, and reports whether
// it never did. t must not change meanwhile (a delete moves entries).
func (t *htab[TK, S]) each(fn func(TK, S) bool) bool {
	for i, c := range t.ctrl {
		if c != 0 && !fn(t.slots[i].k, t.slots[i].v) {
			return false
		}
	}
	return true
}

// keyHasher returns the keyed operator's stable hash of K (keygroup.Hasher),
// or, for a key type without one (which a keyed stream refuses, but the
// backend does not need), the runtime's hash of comparable values.
func keyHasher[K comparable]() func(K) uint32 {
	if h, err := keygroup.Hasher[K](); err == nil {
		return h
	}
	seed := maphash.MakeSeed()
	return func(k K) uint32 { return uint32(maphash.Comparable(seed, k)) }
}

// touch reads the control byte and the slot where a probe for hash h
// starts, so that their cache lines are loaded (see KeyedBackend.Prefetch).
func (t *htab[TK, S]) touch(h uint32) uint8 {
	if len(t.ctrl) == 0 {
		return 0
	}
	i := int(spread(h) >> t.shift)
	return t.ctrl[i] ^ *(*uint8)(unsafe.Pointer(&t.slots[i]))
}
