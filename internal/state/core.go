package state

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/weirstream/weir/internal/codec"
)

// Kind tells the state kinds apart in snapshots and registrations.
type Kind uint8

const (
	KindValue Kind = iota + 1
	KindList
	KindMap
	KindReducing
	// KindTimers is the processing-time timers' section.
	KindTimers
	// KindEventTimers is the event-time timers' section. It comes after
	// KindTimers so that a checkpoint written before event time (which has
	// no such section) reads unchanged.
	KindEventTimers
)

// isTimers reports whether k is one of the timer sections, which have the
// empty name (no state can be registered under it).
func (k Kind) isTimers() bool { return k == KindTimers || k == KindEventTimers }

func (k Kind) String() string {
	if k.HasTTL() {
		return k.Base().String() + " with TTL"
	}
	switch k {
	case KindValue:
		return "value state"
	case KindList:
		return "list state"
	case KindMap:
		return "map state"
	case KindReducing:
		return "reducing state"
	case KindTimers:
		return "processing-time timers"
	case KindEventTimers:
		return "event-time timers"
	}
	return fmt.Sprintf("kind %d", uint8(k))
}

// registered is what the backend needs of every state, whatever its types.
type registered interface {
	stateName() string
	stateKind() Kind
	// types describes the kind and Go types, for mismatch errors.
	types() string
	// freeze captures the state for a snapshot taken at TTL clock time
	// now (0 without a clock).
	freeze(now int64) frozen
	// restoreGroup decodes one section payload into key group index i.
	restoreGroup(i int, payload []byte) error
	size() int
	// touch loads the first position key hash h would probe in group i,
	// for Prefetch.
	touch(i int, h uint32) uint8
}

// frozen is a state's maps as of a snapshot, safe to read on another
// goroutine until the snapshot is released.
type frozen interface {
	empty(i int) bool
	// appendGroup appends the section payload of key group index i and
	// reports whether it has an entry (TTL states may have none left).
	appendGroup(dst []byte, i int) ([]byte, bool)
}

// core is the table of one state plus how to encode it. TK is the table key
// (the backend key, or key and timestamp for timers), S the per-key state.
type core[TK comparable, S any] struct {
	name string
	kind Kind
	desc string
	tab  table[TK, S]
	encK func([]byte, TK) []byte
	decK func([]byte) (TK, int, error)
	// encS appends a state's encoding; scratch serves a map state's inner
	// sort and belongs to the calling snapshot writer.
	encS func(dst []byte, s S, scratch *entrySorter) []byte
	decS func([]byte) (S, int, error)
	// prune, set for TTL states, returns what of s is unexpired at now,
	// and false if nothing is: full snapshots skip expired values.
	prune func(s S, now int64) (S, bool)
}

func (c *core[TK, S]) stateName() string { return c.name }
func (c *core[TK, S]) stateKind() Kind   { return c.kind }
func (c *core[TK, S]) types() string     { return c.desc }
func (c *core[TK, S]) size() int         { return c.tab.size() }

func (c *core[TK, S]) touch(i int, h uint32) uint8 { return c.tab.groups[i].touch(h) }

// eachKey calls fn with the keys of group i until it returns false, and
// reports whether it never did. It ranges over the map current at the
// start: a copy-on-write clone made meanwhile is not seen.
func (c *core[TK, S]) eachKey(i int, fn func(TK) bool) bool {
	// Collect first: fn may write the state, and a delete moves entries
	// within the table (see htab.del).
	g := c.tab.groups[i].htab
	keys := make([]TK, 0, g.n)
	g.each(func(k TK, _ S) bool { keys = append(keys, k); return true })
	for _, k := range keys {
		if !fn(k) {
			return false
		}
	}
	return true
}

func (c *core[TK, S]) freeze(now int64) frozen {
	return &frozenTable[TK, S]{maps: c.tab.freeze(), encK: c.encK, encS: c.encS, prune: c.prune, now: now}
}

func (c *core[TK, S]) restoreGroup(i int, payload []byte) error {
	count, n, err := readCount(payload)
	if err != nil {
		return err
	}
	for range count {
		k, kn, err := c.decK(payload[n:])
		if err != nil {
			return asCorrupt(fmt.Errorf("key: %w", err))
		}
		n += kn
		s, sn, err := c.decS(payload[n:])
		if err != nil {
			return asCorrupt(fmt.Errorf("value: %w", err))
		}
		n += sn
		c.tab.set(i, k, c.tab.hash(k), s)
	}
	if n != len(payload) {
		return fmt.Errorf("%d bytes left after %d entries: %w", len(payload)-n, count, codec.ErrCorrupt)
	}
	return nil
}

// frozenTable is read by one snapshot writer goroutine; its sorters are
// that writer's scratch space.
type frozenTable[TK comparable, S any] struct {
	maps        []htab[TK, S]
	encK        func([]byte, TK) []byte
	encS        func([]byte, S, *entrySorter) []byte
	prune       func(S, int64) (S, bool)
	now         int64
	sort, inner entrySorter
}

func (f *frozenTable[TK, S]) empty(i int) bool { return f.maps[i].n == 0 }

// appendGroup writes the entries in canonical order (see entrySorter), not
// in map order, so that equal state gives equal bytes in any backend.
func (f *frozenTable[TK, S]) appendGroup(dst []byte, i int) ([]byte, bool) {
	f.sort.reset()
	f.maps[i].each(func(k TK, s S) bool {
		if f.prune != nil {
			var ok bool
			if s, ok = f.prune(s, f.now); !ok {
				return true
			}
		}
		k0 := len(f.sort.buf)
		f.sort.buf = f.encK(f.sort.buf, k)
		v0 := len(f.sort.buf)
		f.sort.buf = f.encS(f.sort.buf, s, &f.inner)
		f.sort.mark(k0, v0)
		return true
	})
	if len(f.sort.ents) == 0 {
		return dst, false
	}
	return f.sort.appendSorted(dst), true
}

// maxZeroSizeCount bounds a count read from a snapshot beyond what the
// remaining bytes justify: entries of zero-size types encode to nothing.
const maxZeroSizeCount = 1 << 20

// readCount reads an element count and checks it against the input: every
// entry takes at least a byte unless its types have zero size.
func readCount(src []byte) (count int, n int, err error) {
	c, n := binary.Uvarint(src)
	if n <= 0 {
		return 0, 0, fmt.Errorf("bad count varint: %w", codec.ErrCorrupt)
	}
	if c > uint64(len(src)-n) && c > maxZeroSizeCount {
		return 0, 0, fmt.Errorf("count %d exceeds the %d bytes left: %w", c, len(src)-n, codec.ErrCorrupt)
	}
	return int(c), n, nil
}

// asCorrupt makes sure a decoding error wraps codec.ErrCorrupt, even when a
// user-supplied codec returned an error of its own.
func asCorrupt(err error) error {
	if errors.Is(err, codec.ErrCorrupt) || errors.Is(err, ErrMigration) {
		return err
	}
	return fmt.Errorf("%w: %w", codec.ErrCorrupt, err)
}
