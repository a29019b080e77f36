package state

import (
	"encoding/binary"
	"errors"
	"fmt"
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

type section struct {
	name string
	kind kind
	f    frozen
	raw  [][]byte // restored bytes of an unregistered state, carried over
}

type keyedSnapshot struct {
	kgs      keygroup.Range
	sections []section
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
	s.sections = make([]section, 0, len(b.order)+len(b.pending)+1)
	for _, st := range b.order {
		s.sections = append(s.sections, section{name: st.stateName(), kind: st.stateKind(), f: st.freeze()})
	}
	for _, name := range b.UnrestoredStates() {
		p := b.pending[name]
		s.sections = append(s.sections, section{name: name, kind: p.kind, raw: append([][]byte(nil), p.blocks...)})
	}
	s.sections = append(s.sections, section{kind: kindTimers, f: b.timers.core.freeze()})
	return s
}

func (sec *section) empty(i int) bool {
	if sec.f != nil {
		return sec.f.empty(i)
	}
	return sec.raw[i] == nil
}

func (sec *section) appendPayload(dst []byte, i int) []byte {
	if sec.f != nil {
		return sec.f.appendGroup(dst, i)
	}
	return append(dst, sec.raw[i]...)
}

var errSnapshotUsed = errors.New("keyed snapshot already written or released: take a new snapshot")

func (s *keyedSnapshot) WriteBlocks(w io.Writer) ([]checkpoint.KeyGroupOffset, error) {
	if !s.state.CompareAndSwap(0, 1) {
		return nil, errSnapshotUsed
	}
	var (
		offsets []checkpoint.KeyGroupOffset
		off     int64
		block   []byte
		payload []byte
	)
	for i := range s.kgs.Len() {
		n := 0
		for j := range s.sections {
			if !s.sections[j].empty(i) {
				n++
			}
		}
		if n == 0 {
			continue
		}
		kg := s.kgs.Start + i
		block = append(block[:0], blockVersion)
		block = binary.AppendUvarint(block, uint64(kg))
		block = binary.AppendUvarint(block, uint64(n))
		for j := range s.sections {
			sec := &s.sections[j]
			if sec.empty(i) {
				continue
			}
			block = appendString(block, sec.name)
			block = append(block, byte(sec.kind))
			payload = sec.appendPayload(payload[:0], i)
			block = binary.AppendUvarint(block, uint64(len(payload)))
			block = append(block, payload...)
		}
		if _, err := w.Write(block); err != nil {
			return nil, fmt.Errorf("write keyed state of key group %d: %w", kg, err)
		}
		offsets = append(offsets, checkpoint.KeyGroupOffset{KeyGroup: kg, Offset: off, Length: int64(len(block))})
		off += int64(len(block))
	}
	return offsets, nil
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
