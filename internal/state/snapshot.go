package state

import (
	"encoding/binary"
	"errors"
	"io"
	"sync/atomic"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/keygroup"
)

// blockVersion is the first byte of every key-group block.
const blockVersion = 1

// KeyedSnapshot is the state of a keyed backend as of a Snapshot call.
type KeyedSnapshot interface {
	// WriteBlocks (not WriteTo: go vet reserves that name for io.WriterTo's
	// signature) serializes one block per non-empty key group of the range,
	// holding every state and the timers of that group, and returns where
	// each block lies, relative to the start of w. It may run on any
	// goroutine, concurrently with the task changing the backend, and at
	// most once.
	WriteBlocks(w io.Writer) ([]checkpoint.KeyGroupOffset, error)
	// Release ends the snapshot; call it once WriteBlocks has returned (or
	// instead of it, to abandon the snapshot). Until every snapshot is
	// released the task clones maps on first write.
	Release()
}

// heapSection is a registered state's tables as of a snapshot, or the
// carried-over bytes of an unregistered one.
type heapSection struct {
	name string
	kind Kind
	kgs  keygroup.Range
	f    frozen
	raw  [][]byte // restored bytes of an unregistered state, carried over
}

func (sec *heapSection) SectionName() string { return sec.name }
func (sec *heapSection) SectionKind() Kind   { return sec.kind }

func (sec *heapSection) AppendGroup(dst []byte, kg int) ([]byte, bool, error) {
	i := kg - sec.kgs.Start
	if sec.f != nil {
		if sec.f.empty(i) {
			return dst, false, nil
		}
		out, ok := sec.f.appendGroup(dst, i)
		if !ok {
			return dst, false, nil
		}
		return out, true, nil
	}
	if sec.raw[i] == nil {
		return dst, false, nil
	}
	return append(dst, sec.raw[i]...), true, nil
}

type keyedSnapshot struct {
	kgs      keygroup.Range
	sections []Section
	cow      *cow
	state    atomic.Int32 // 0 new, 1 written, 2 released
}

// Snapshot captures the backend's states and timers. It is the synchronous
// part of a checkpoint and copies no entries: it costs one slice of map
// references per state (O(states × key groups)) and bumps the copy-on-write
// epoch, after which the first write to each key group (and to each map
// state entry) clones it while the snapshot is unreleased.
func (b *KeyedBackend[K]) Snapshot() KeyedSnapshot {
	b.cow.epoch++
	b.cow.live.Add(1)
	s := &keyedSnapshot{kgs: b.kgs, cow: b.cow}
	s.sections = make([]Section, 0, len(b.order)+len(b.pending)+2)
	var now int64 // TTL states drop what expired by the snapshot's time
	if b.ttlNow != nil {
		now = b.ttlNow()
	}
	for _, st := range b.order {
		s.sections = append(s.sections, &heapSection{name: st.stateName(), kind: st.stateKind(), kgs: b.kgs, f: st.freeze(now)})
	}
	for name, p := range b.pending {
		s.sections = append(s.sections, &heapSection{name: name, kind: p.kind, kgs: b.kgs, raw: append([][]byte(nil), p.blocks...)})
	}
	for _, t := range []*Timers[K]{b.timers, b.events} {
		s.sections = append(s.sections, &heapSection{kind: t.core.kind, kgs: b.kgs, f: t.core.freeze(0)})
	}
	SortSections(s.sections)
	return s
}

// ErrSnapshotUsed is returned by a second WriteBlocks of one snapshot.
var ErrSnapshotUsed = errors.New("keyed snapshot already written or released: take a new snapshot")

func (s *keyedSnapshot) WriteBlocks(w io.Writer) ([]checkpoint.KeyGroupOffset, error) {
	if !s.state.CompareAndSwap(0, 1) {
		return nil, ErrSnapshotUsed
	}
	return WriteBlocks(w, s.kgs, s.sections)
}

func (s *keyedSnapshot) Release() {
	if s.state.Swap(2) != 2 {
		s.cow.live.Add(-1)
	}
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}
