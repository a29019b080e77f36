package lsm

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/state"
)

// TTL cleanup. Reads remove the expired values they find and full
// snapshots leave expired values out, but a key that is never read again
// would keep its expired state in the store for ever. Pebble (v2.1) has
// no compaction filter through which compactions could drop it, so the
// backend sweeps the store itself, incrementally: every ttlCleanupEvery
// records (SetCurrentKey calls) while a TTL state is registered, it
// examines the next ttlCleanupKeys store keys of its key groups from a
// cursor that wraps around, and deletes (or, for a list, rewrites without
// its expired elements) what expired by the TTL clock. The work per record
// is thus bounded and amortized (about ttlCleanupKeys/ttlCleanupEvery key
// visits), and a store of n keys is swept every n/ttlCleanupKeys steps.
const (
	ttlCleanupEvery = 1024
	ttlCleanupKeys  = 64
)

type ttlCleanup struct {
	ttl    map[uint16]ttlState // each registered TTL state by id; nil if none
	n      int                 // records since the last step
	cursor []byte              // the next store key to examine; nil: the range's start
	batch  *pebble.Batch       // during a step
	frames []byte              // scratch for a list rewritten without expired elements
}

type ttlState struct {
	ms   int64 // time to live
	list bool  // a list: one store entry of stamped frames
}

// addTTLState makes the sweep cover state sid.
func (c *ttlCleanup) addTTLState(sid uint16, spec state.StateSpec) {
	if !spec.Kind.HasTTL() {
		return
	}
	if c.ttl == nil {
		c.ttl = map[uint16]ttlState{}
	}
	c.ttl[sid] = ttlState{ms: spec.TTL.Milliseconds(), list: spec.Kind.Base() == state.KindList}
}

// tick counts one record and runs a sweep step when one is due.
func (b *Backend[K]) tick() {
	c := &b.cleanup
	if c.ttl == nil || b.ttlNow == nil {
		return
	}
	if c.n++; c.n < ttlCleanupEvery {
		return
	}
	c.n = 0
	if _, err := b.sweepTTL(ttlCleanupKeys); err != nil {
		b.fail(fmt.Errorf("TTL cleanup: %w", err))
	}
}

// sweepTTL examines up to max store keys from the cursor and removes the
// expired values of TTL states among them; it reports whether it reached
// the end of the range (the cursor wrapped).
func (b *Backend[K]) sweepTTL(max int) (wrapped bool, err error) {
	c := &b.cleanup
	lo := appendGroupPrefix(nil, b.kgs.Start)
	if c.cursor != nil {
		lo = c.cursor
	}
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: appendGroupPrefix(nil, b.kgs.End)})
	if err != nil {
		return false, err
	}
	c.batch = b.db.NewBatch()
	defer func() { c.batch.Close(); c.batch = nil }()
	now := b.ttlNow()
	n := 0
	valid := it.First()
	for ; valid && n < max; valid = it.Next() {
		n++
		key := it.Key()
		if len(key) < headerLen {
			continue
		}
		st, ok := c.ttl[binary.BigEndian.Uint16(key[kgLen:])]
		if !ok {
			continue
		}
		// A buffered key's newest state is the buffer's: sweep that, and
		// forget the slot if the batch now holds a newer state.
		s := b.buf.lookup(key)
		var v []byte
		if s != nil {
			if !s.present {
				continue
			}
			v = s.val
		} else if v, err = it.ValueAndErr(); err != nil {
			it.Close()
			return false, err
		}
		changed, err := c.sweepEntry(key, v, now, st)
		if err != nil {
			it.Close()
			return false, fmt.Errorf("store key %x: %w", key, err)
		}
		if changed && s != nil {
			b.bdrop(key)
		}
	}
	if valid {
		c.cursor = append(c.cursor[:0], it.Key()...)
	} else {
		c.cursor = nil
		wrapped = true
	}
	if err := it.Close(); err != nil {
		return false, err
	}
	if !c.batch.Empty() {
		if err := c.batch.Commit(pebble.NoSync); err != nil {
			return false, err
		}
	}
	return wrapped, nil
}

// sweepEntry queues the removal of what expired in one store entry: the
// entry, or for a list the expired elements (frames), the entry if none is
// left; changed reports whether it queued a write.
func (c *ttlCleanup) sweepEntry(key, v []byte, now int64, st ttlState) (changed bool, err error) {
	expired := func(e []byte) (bool, error) {
		ts, n := binary.Varint(e)
		if n <= 0 {
			return false, fmt.Errorf("TTL timestamp: bad varint: %w", codec.ErrCorrupt)
		}
		return now-ts >= st.ms, nil
	}
	if !st.list {
		if exp, err := expired(v); err != nil || !exp {
			return false, err
		}
		return true, c.batch.Delete(key, nil)
	}
	c.frames = c.frames[:0]
	dropped := false
	for r := v; len(r) > 0; {
		e, rest, err := state.NextFrame(r)
		if err != nil {
			return false, err
		}
		exp, err := expired(e)
		if err != nil {
			return false, err
		}
		if exp {
			dropped = true
		} else {
			c.frames = state.AppendFrame(c.frames, e)
		}
		r = rest
	}
	switch {
	case !dropped:
		return false, nil
	case len(c.frames) == 0:
		return true, c.batch.Delete(key, nil)
	}
	return true, c.batch.Set(key, c.frames, nil)
}
