package lsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

// snapshot is a full snapshot in the canonical format, read from a Pebble
// snapshot (a sequence number: taking it copies nothing and blocks no
// writer). The task goroutine only takes it; WriteBlocks iterates the store
// on the writer's goroutine while the task keeps writing.
type snapshot[K comparable] struct {
	b             *Backend[K]
	snap          *pebble.Snapshot
	kgs           keygroup.Range
	sections      []state.Section
	releaseTimers func()
	it            *pebble.Iterator // open during WriteBlocks
	state         atomic.Int32     // 0 new, 1 written, 2 released
}

// Snapshot is the synchronous part of a checkpoint: a Pebble snapshot, the
// list of registered states and a copy-on-write capture of the timers.
func (b *Backend[K]) Snapshot() state.KeyedSnapshot {
	b.live.Add(1)
	s := &snapshot[K]{b: b, snap: b.db.NewSnapshot(), kgs: b.kgs}
	for name, r := range b.states {
		s.sections = append(s.sections, &storeSection[K]{s: s, name: name, kind: r.spec.Kind, sid: r.sid})
	}
	for name, p := range b.pending {
		s.sections = append(s.sections, &pendingSection{snap: s.snap, name: name, kind: p.kind})
	}
	timers, release := b.timerSections()
	s.releaseTimers = release
	s.sections = append(s.sections, timers[:]...)
	state.SortSections(s.sections)
	return s
}

func (s *snapshot[K]) WriteBlocks(w io.Writer) ([]checkpoint.KeyGroupOffset, error) {
	if !s.state.CompareAndSwap(0, 1) {
		return nil, state.ErrSnapshotUsed
	}
	lo := appendGroupPrefix(nil, s.kgs.Start)
	hi := appendGroupPrefix(nil, s.kgs.End)
	it, err := s.snap.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, fmt.Errorf("lsm state backend: snapshot iterator: %w", err)
	}
	s.it = it
	offsets, err := state.WriteBlocks(w, s.kgs, s.sections)
	s.it = nil
	return offsets, errors.Join(err, it.Close())
}

func (s *snapshot[K]) Release() {
	if s.state.Swap(2) == 2 {
		return
	}
	s.snap.Close()
	s.releaseTimers()
	s.b.live.Add(-1)
}

// storeSection reads one registered state's entries from the snapshot and
// writes them in the canonical format. The store's order is the canonical
// order (see state.ComparePrefixed), so it copies entries as it meets them.
type storeSection[K comparable] struct {
	s          *snapshot[K]
	name       string
	kind       state.Kind
	sid        uint16
	prefix     []byte
	body, ents []byte
	lastKey    []byte
}

func (sec *storeSection[K]) SectionName() string     { return sec.name }
func (sec *storeSection[K]) SectionKind() state.Kind { return sec.kind }

func (sec *storeSection[K]) AppendGroup(dst []byte, kg int) ([]byte, bool, error) {
	it := sec.s.it
	sec.prefix = appendStatePrefix(sec.prefix[:0], kg, sec.sid)
	sec.body = sec.body[:0]
	count, entries := 0, 0
	for valid := it.SeekGE(sec.prefix); valid && bytes.HasPrefix(it.Key(), sec.prefix); valid = it.Next() {
		sk, err := parseKey(it.Key())
		if err != nil {
			return nil, false, err
		}
		if len(sk.ns) != 0 {
			return nil, false, fmt.Errorf("key with a namespace: the canonical format has none yet")
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, false, err
		}
		switch sec.kind.Base() {
		case state.KindValue, state.KindReducing:
			sec.body = append(append(sec.body, sk.key...), v...)
			count++
		case state.KindList:
			if sec.body, err = appendList(sec.body, sk.key, v); err != nil {
				return nil, false, err
			}
			count++
		case state.KindMap:
			uk, err := userKey(sk.suffix)
			if err != nil {
				return nil, false, err
			}
			if count == 0 || !bytes.Equal(sk.key, sec.lastKey) {
				sec.flushMap(entries)
				sec.lastKey = append(sec.lastKey[:0], sk.key...)
				count++
				entries = 0
			}
			sec.ents = append(append(sec.ents, uk...), v...)
			entries++
		}
	}
	if err := it.Error(); err != nil {
		return nil, false, err
	}
	if count == 0 {
		return dst, false, nil
	}
	if sec.kind.Base() == state.KindMap {
		sec.flushMap(entries)
	}
	dst = binary.AppendUvarint(dst, uint64(count))
	return append(dst, sec.body...), true, nil
}

// flushMap appends the previous key's map (key, entry count, entries).
func (sec *storeSection[K]) flushMap(entries int) {
	if entries == 0 {
		return
	}
	sec.body = append(sec.body, sec.lastKey...)
	sec.body = binary.AppendUvarint(sec.body, uint64(entries))
	sec.body = append(sec.body, sec.ents...)
	sec.ents = sec.ents[:0]
}

// appendList appends a list in the canonical form (key, element count,
// elements) from its frames.
func appendList(dst, key, frames []byte) ([]byte, error) {
	n := 0
	for r := frames; len(r) > 0; n++ {
		_, rest, err := state.NextFrame(r)
		if err != nil {
			return nil, err
		}
		r = rest
	}
	dst = append(dst, key...)
	dst = binary.AppendUvarint(dst, uint64(n))
	for r := frames; len(r) > 0; {
		e, rest, _ := state.NextFrame(r)
		dst = append(dst, e...)
		r = rest
	}
	return dst, nil
}

// pendingSection carries the restored payloads of a state that was never
// registered into the next snapshots, as the heap backend does.
type pendingSection struct {
	snap *pebble.Snapshot // the staged payloads as of the snapshot
	name string
	kind state.Kind
}

func (sec *pendingSection) SectionName() string     { return sec.name }
func (sec *pendingSection) SectionKind() state.Kind { return sec.kind }

func (sec *pendingSection) AppendGroup(dst []byte, kg int) ([]byte, bool, error) {
	return stagedGroup(sec.snap, sec.name, kg, dst)
}
