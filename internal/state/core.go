package state

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/weirstream/weir/internal/codec"
)

// kind tells the state kinds apart in snapshots and registrations.
type kind uint8

const (
	kindValue kind = iota + 1
	kindList
	kindMap
	kindReducing
	kindTimers
)

func (k kind) String() string {
	switch k {
	case kindValue:
		return "value state"
	case kindList:
		return "list state"
	case kindMap:
		return "map state"
	case kindReducing:
		return "reducing state"
	case kindTimers:
		return "timers"
	}
	return fmt.Sprintf("kind %d", uint8(k))
}

// registered is what the backend needs of every state, whatever its types.
type registered interface {
	stateName() string
	stateKind() kind
	// types describes the kind and Go types, for mismatch errors.
	types() string
	freeze() frozen
	// restoreGroup decodes one section payload into key group index i.
	restoreGroup(i int, payload []byte) error
	size() int
}

// frozen is a state's maps as of a snapshot, safe to read on another
// goroutine until the snapshot is released.
type frozen interface {
	empty(i int) bool
	// appendGroup appends the section payload of key group index i.
	appendGroup(dst []byte, i int) []byte
}

// core is the table of one state plus how to encode it. TK is the table key
// (the backend key, or key and timestamp for timers), S the per-key state.
type core[TK comparable, S any] struct {
	name string
	kind kind
	desc string
	tab  table[TK, S]
	encK func([]byte, TK) []byte
	decK func([]byte) (TK, int, error)
	encS func([]byte, S) []byte
	decS func([]byte) (S, int, error)
}

func (c *core[TK, S]) stateName() string { return c.name }
func (c *core[TK, S]) stateKind() kind   { return c.kind }
func (c *core[TK, S]) types() string     { return c.desc }
func (c *core[TK, S]) size() int         { return c.tab.size() }

func (c *core[TK, S]) freeze() frozen {
	return &frozenTable[TK, S]{maps: c.tab.freeze(), encK: c.encK, encS: c.encS}
}

func (c *core[TK, S]) restoreGroup(i int, payload []byte) error {
	count, n, err := readCount(payload)
	if err != nil {
		return err
	}
	m := c.tab.mut(i)
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
		m[k] = s
	}
	if n != len(payload) {
		return fmt.Errorf("%d bytes left after %d entries: %w", len(payload)-n, count, codec.ErrCorrupt)
	}
	return nil
}

type frozenTable[TK comparable, S any] struct {
	maps []map[TK]S
	encK func([]byte, TK) []byte
	encS func([]byte, S) []byte
}

func (f *frozenTable[TK, S]) empty(i int) bool { return len(f.maps[i]) == 0 }

func (f *frozenTable[TK, S]) appendGroup(dst []byte, i int) []byte {
	m := f.maps[i]
	dst = binary.AppendUvarint(dst, uint64(len(m)))
	for k, s := range m {
		dst = f.encK(dst, k)
		dst = f.encS(dst, s)
	}
	return dst
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
	if errors.Is(err, codec.ErrCorrupt) {
		return err
	}
	return fmt.Errorf("%w: %w", codec.ErrCorrupt, err)
}
