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
	"github.com/weirstream/weir/internal/codec"
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
	// err is the backend's error when the snapshot was taken, such as a
	// failed write-back of the write buffer: the snapshot may then lack
	// writes before the barrier, and WriteBlocks fails instead.
	err error
}

// Snapshot is the synchronous part of a checkpoint: a Pebble snapshot, the
// list of registered states and a copy-on-write capture of the timers.
func (b *Backend[K]) Snapshot() state.KeyedSnapshot {
	b.flushBuffer() // the snapshot holds every write before the barrier
	b.live.Add(1)
	s := &snapshot[K]{b: b, snap: b.db.NewSnapshot(), kgs: b.kgs, err: b.err}
	var now int64 // TTL states leave out what expired by now
	if b.ttlNow != nil {
		now = b.ttlNow()
	}
	for name, r := range b.states {
		sec := &storeSection[K]{s: s, name: name, kind: r.spec.Kind, sid: r.sid}
		if r.spec.Kind.HasTTL() {
			sec.ttl, sec.now = r.spec.TTL.Milliseconds(), now
		}
		s.sections = append(s.sections, sec)
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
	if s.err != nil {
		return nil, fmt.Errorf("lsm state backend: snapshot of a failed store: %w", s.err)
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
	// ttl (ms) is set for TTL states: entries stamped at ts with
	// now-ts >= ttl are left out (snapshot cleanup).
	ttl, now int64
}

// expired reports whether the stamped value v (zigzag-varint ts first)
// expired by the snapshot's time; false for states without TTL.
func (sec *storeSection[K]) expired(v []byte) (bool, error) {
	if sec.ttl == 0 {
		return false, nil
	}
	ts, n := binary.Varint(v)
	if n <= 0 {
		return false, fmt.Errorf("TTL timestamp: bad varint: %w", codec.ErrCorrupt)
	}
	return sec.now-ts >= sec.ttl, nil
}

func (sec *storeSection[K]) SectionName() string     { return sec.name }
func (sec *storeSection[K]) SectionKind() state.Kind { return sec.kind }

func (sec *storeSection[K]) AppendGroup(dst []byte, kg int) ([]byte, bool, error) {
	it := sec.s.it
	sec.prefix = appendStatePrefix(sec.prefix[:0], kg, sec.sid)
	sec.body = sec.body[:0]
	count, entries, started := 0, 0, false
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
			exp, err := sec.expired(v)
			if err != nil {
				return nil, false, err
			}
			if !exp {
				sec.body = append(append(sec.body, sk.key...), v...)
				count++
			}
		case state.KindList:
			var n int
			if sec.body, n, err = sec.appendList(sec.body, sk.key, v); err != nil {
				return nil, false, err
			}
			if n > 0 {
				count++
			}
		case state.KindMap:
			uk, err := userKey(sk.suffix)
			if err != nil {
				return nil, false, err
			}
			if !started || !bytes.Equal(sk.key, sec.lastKey) {
				count += sec.flushMap(entries)
				sec.lastKey = append(sec.lastKey[:0], sk.key...)
				started = true
				entries = 0
			}
			exp, err := sec.expired(v)
			if err != nil {
				return nil, false, err
			}
			if !exp {
				sec.ents = append(append(sec.ents, uk...), v...)
				entries++
			}
		}
	}
	if err := it.Error(); err != nil {
		return nil, false, err
	}
	if sec.kind.Base() == state.KindMap {
		count += sec.flushMap(entries)
	}
	if count == 0 {
		return dst, false, nil
	}
	dst = binary.AppendUvarint(dst, uint64(count))
	return append(dst, sec.body...), true, nil
}

// flushMap appends the previous key's map (key, entry count, entries), if
// it has entries, and returns how many keys it appended (0 or 1).
func (sec *storeSection[K]) flushMap(entries int) int {
	if entries == 0 {
		sec.ents = sec.ents[:0]
		return 0
	}
	sec.body = append(sec.body, sec.lastKey...)
	sec.body = binary.AppendUvarint(sec.body, uint64(entries))
	sec.body = append(sec.body, sec.ents...)
	sec.ents = sec.ents[:0]
	return 1
}

// appendList appends a list in the canonical form (key, element count,
// elements) from its frames, leaving out expired elements of a TTL state;
// n is the number of elements appended, and nothing is appended if 0.
func (sec *storeSection[K]) appendList(dst, key, frames []byte) (_ []byte, n int, err error) {
	for r := frames; len(r) > 0; {
		e, rest, err := state.NextFrame(r)
		if err != nil {
			return nil, 0, err
		}
		exp, err := sec.expired(e)
		if err != nil {
			return nil, 0, err
		}
		if !exp {
			n++
		}
		r = rest
	}
	if n == 0 {
		return dst, 0, nil
	}
	dst = append(dst, key...)
	dst = binary.AppendUvarint(dst, uint64(n))
	for r := frames; len(r) > 0; {
		e, rest, _ := state.NextFrame(r)
		if exp, _ := sec.expired(e); !exp {
			dst = append(dst, e...)
		}
		r = rest
	}
	return dst, n, nil
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
