package lsm

import (
	"github.com/cockroachdb/pebble/v2"
)

// The write buffer (state.backend.lsm.write-buffer-size) is a bounded
// cache of store keys in front of Pebble, on the task goroutine, with
// read-your-writes.
// A read-modify-write of a value state costs two Pebble calls without it:
// a point read that seeks the memtables and the files of every level it
// passes, then a memtable insert through the commit pipeline, each a
// skiplist search of a few microseconds over a 16 MiB arena. With it, a
// key read or written recently is served by a Go map lookup and updated in
// place; a key that is not there is read from Pebble once and kept.
//
// Buffered are the keys of value, reducing and list states (one store key
// per key) and the entries of map states (one store key per user key).
// A map's entries share their key's store key as prefix, and iteration and
// Clear work on that prefix as a range of the store, which a hash map does
// not have: so the buffer also groups the buffered entries of each map
// prefix (groups), and an iteration first writes the dirty entries of its
// group, a Clear forgets them before its range delete. Without this a
// window operator, whose windows are map entries, paid a Pebble read and
// a memtable insert per record and window. A list Append to a key that is
// not buffered stays a blind Pebble merge.
//
// Dirty entries reach Pebble in batches: when the buffer is full, a clock
// sweep (second chance for entries used since the hand last passed)
// evicts entries down to 15/16 of the capacity and commits the dirty ones
// in one batch; and every scan of the store first writes every dirty entry
// (flushBuffer): full and incremental snapshots (so a checkpoint holds
// every write before its barrier, and none after: the task writes again
// only after the synchronous part returned), Keys, and restores. The TTL
// sweep skips buffered keys: the buffer holds their newest value, which
// reads and snapshots check for expiry as they do for stored ones.
type writeBuffer struct {
	capacity int64 // bytes; 0 or less: no buffer
	size     int64 // bytes accounted (slotCost of every used slot)
	index    map[string]int32
	slots    []slot
	free     []int32 // unused slots, their value buffers kept for reuse
	hand     int     // the clock hand: next slot to examine
	batch    *pebble.Batch
	// groups lists, per map prefix, the slots of its buffered entries.
	groups map[string][]int32
}

// slot is one buffered store key. An absent slot records that the key has
// no value (read and not found, or deleted): dirty, it is a Delete.
type slot struct {
	key                       string
	val                       []byte
	used, present, dirty, ref bool
	// plen is the length of a map entry's prefix (its key's store key),
	// 0 for other states; gi is the slot's index in its group.
	plen int32
	gi   int32
	// stored: Pebble may hold a value for the key (it was read there, or
	// written, or the slot was created by a blind write). A key that was
	// read absent and never written back needs no tombstone when it is
	// deleted: a window's entry, created and cleared between two
	// evictions, then never reaches Pebble at all.
	stored bool
}

// slotOverhead is what a slot costs beyond its key and value capacity: the
// map entry (hash slot, string header, index), the slot itself and the
// allocators' rounding. Counting it keeps the capacity a bound on memory,
// not just on payload bytes.
const slotOverhead = 112

func slotCost(key string, val []byte) int64 {
	return int64(len(key) + cap(val) + slotOverhead)
}

func (w *writeBuffer) init(capacity int64) {
	w.capacity = capacity
	if capacity > 0 {
		w.index = map[string]int32{}
		w.groups = map[string][]int32{}
	}
}

// maxEntry is the largest entry the buffer takes: bigger values (long
// lists, large blobs) are written through, so that one entry cannot take
// the whole buffer.
func (w *writeBuffer) maxEntry() int64 { return w.capacity / 8 }

// lookup returns key's slot, or nil.
func (w *writeBuffer) lookup(key []byte) *slot {
	if w.index == nil {
		return nil
	}
	i, ok := w.index[string(key)]
	if !ok {
		return nil
	}
	return &w.slots[i]
}

// bget reads key through the buffer, keeping what it read from Pebble.
// plen is the length of a map entry's prefix in key, 0 for other states.
func (b *Backend[K]) bget(key []byte, plen int) ([]byte, bool) {
	w := &b.buf
	if w.index == nil {
		return b.get(key)
	}
	if s := w.lookup(key); s != nil {
		s.ref = true
		return s.val, s.present
	}
	v, ok := b.get(key)
	if b.err != nil {
		return v, ok
	}
	if int64(len(key)+len(v)+slotOverhead) <= w.maxEntry() {
		b.insert(key, v, ok, false, plen)
	}
	return v, ok
}

// bput sets key to v in the buffer.
func (b *Backend[K]) bput(key, v []byte, plen int) {
	w := &b.buf
	if w.index == nil {
		b.set(key, v)
		return
	}
	if int64(len(key)+len(v)+slotOverhead) > w.maxEntry() {
		b.bdrop(key)
		b.set(key, v)
		return
	}
	if s := w.lookup(key); s != nil {
		w.size += assign(s, v)
		s.present, s.dirty, s.ref = true, true, true
		b.evict()
		return
	}
	b.insert(key, v, true, true, plen)
}

// bdel deletes key in the buffer: a dirty absent slot, a Delete once
// written.
func (b *Backend[K]) bdel(key []byte, plen int) {
	w := &b.buf
	if w.index == nil {
		b.del(key)
		return
	}
	if s := w.lookup(key); s != nil {
		s.val = s.val[:0]
		s.present, s.dirty, s.ref = false, s.stored, true
		return
	}
	b.insert(key, nil, false, true, plen)
}

// bappend appends list frames to key: in place if the key is buffered,
// else as a blind Pebble merge.
func (b *Backend[K]) bappend(key, frames []byte) {
	w := &b.buf
	s := w.lookup(key)
	if s == nil {
		if err := b.db.Merge(key, frames, pebble.NoSync); err != nil {
			b.fail(err)
		}
		return
	}
	if !s.present {
		s.val = s.val[:0]
	}
	old := cap(s.val)
	s.val = append(s.val, frames...)
	w.size += int64(cap(s.val) - old)
	s.present, s.dirty, s.ref = true, true, true
	if slotCost(s.key, s.val) > w.maxEntry() {
		// The list outgrew the buffer: write it through and forget it.
		b.set(key, s.val)
		w.release(w.index[s.key])
		return
	}
	b.evict()
}

// bdrop forgets key's slot, without writing it: the caller writes the
// key's newer state to Pebble.
func (b *Backend[K]) bdrop(key []byte) {
	w := &b.buf
	if w.index == nil {
		return
	}
	if i, ok := w.index[string(key)]; ok {
		w.release(i)
	}
}

// assign copies v into s's value buffer, growing it if needed, and
// returns the change of its capacity.
func assign(s *slot, v []byte) int64 {
	old := cap(s.val)
	if old < len(v) {
		s.val = make([]byte, len(v))
	}
	s.val = s.val[:len(v)]
	copy(s.val, v)
	return int64(cap(s.val) - old)
}

// insert adds a slot for key, then makes room. A reused slot brings the
// value buffer of the entry it held before, so that a steady stream of
// same-sized values allocates nothing.
func (b *Backend[K]) insert(key, v []byte, present, dirty bool, plen int) {
	w := &b.buf
	var i int32
	if n := len(w.free); n > 0 {
		i = w.free[n-1]
		w.free = w.free[:n-1]
	} else {
		w.slots = append(w.slots, slot{})
		i = int32(len(w.slots) - 1)
	}
	s := &w.slots[i]
	s.key = string(key)
	w.size += int64(len(s.key) + slotOverhead + cap(s.val))
	w.size += assign(s, v)
	s.used, s.present, s.dirty, s.ref = true, present, dirty, false
	// Read from Pebble (clean): stored if found. Written blind (dirty):
	// Pebble may hold an older value.
	s.stored = present || dirty
	s.plen = int32(plen)
	w.index[s.key] = i
	if plen > 0 {
		g := s.key[:plen]
		s.gi = int32(len(w.groups[g]))
		w.groups[g] = append(w.groups[g], i)
	}
	b.evict()
}

// release frees slot i. Its value buffer stays with the slot for the next
// insert, uncounted: the free slots hold at most what one eviction round
// freed (see MemoryBound).
func (w *writeBuffer) release(i int32) {
	s := &w.slots[i]
	delete(w.index, s.key)
	if s.plen > 0 {
		w.ungroup(s)
	}
	w.size -= int64(len(s.key) + slotOverhead + cap(s.val))
	s.key, s.used, s.dirty, s.present, s.ref = "", false, false, false, false
	s.plen, s.gi, s.stored = 0, 0, false
	s.val = s.val[:0]
	w.free = append(w.free, i)
}

// ungroup removes map entry s from its group: the group's last slot takes
// its place.
func (w *writeBuffer) ungroup(s *slot) {
	g := s.key[:s.plen]
	list := w.groups[g]
	last := list[len(list)-1]
	list[s.gi] = last
	w.slots[last].gi = s.gi
	list = list[:len(list)-1]
	if len(list) == 0 {
		delete(w.groups, g)
		return
	}
	w.groups[g] = list
}

// flushGroup writes the dirty buffered entries of map prefix p, so that
// an iteration of the store's range sees them.
func (b *Backend[K]) flushGroup(p []byte) {
	w := &b.buf
	if w.index == nil {
		return
	}
	for _, i := range w.groups[string(p)] {
		if s := &w.slots[i]; s.dirty {
			b.stage(s)
		}
	}
	b.commitBuffer()
}

// dropGroup forgets the buffered entries of map prefix p without writing
// them: the caller deletes the prefix's range in the store.
func (b *Backend[K]) dropGroup(p []byte) {
	w := &b.buf
	if w.index == nil {
		return
	}
	for {
		list := w.groups[string(p)]
		if len(list) == 0 {
			return
		}
		w.release(list[len(list)-1])
	}
}

// evict runs the clock when the buffer is over its capacity: it evicts
// entries not used since the hand last passed them until the buffer is at
// 15/16 of its capacity, and commits the dirty ones in one batch.
func (b *Backend[K]) evict() {
	w := &b.buf
	if w.size <= w.capacity {
		return
	}
	low := w.capacity - w.capacity/16
	for w.size > low && len(w.index) > 0 {
		if w.hand >= len(w.slots) {
			w.hand = 0
		}
		i := w.hand
		w.hand++
		s := &w.slots[i]
		if !s.used {
			continue
		}
		if s.ref {
			s.ref = false
			continue
		}
		if s.dirty {
			b.stage(s)
		}
		w.release(int32(i))
	}
	b.commitBuffer()
}

// stage adds dirty slot s to the buffer's batch.
func (b *Backend[K]) stage(s *slot) {
	w := &b.buf
	if w.batch == nil {
		w.batch = b.db.NewBatch()
	}
	var err error
	if s.present {
		err = w.batch.Set([]byte(s.key), s.val, nil)
	} else {
		err = w.batch.Delete([]byte(s.key), nil)
	}
	if err != nil {
		b.fail(err)
	}
	s.dirty, s.stored = false, s.present
}

func (b *Backend[K]) commitBuffer() {
	w := &b.buf
	if w.batch == nil || w.batch.Empty() {
		return
	}
	if err := w.batch.Commit(pebble.NoSync); err != nil {
		b.fail(err)
	}
	w.batch.Reset()
}

// flushBuffer writes every dirty entry to Pebble; entries stay buffered,
// clean. Every scan of the store calls it first.
func (b *Backend[K]) flushBuffer() {
	w := &b.buf
	if w.index == nil {
		return
	}
	limit := int(min(loadBatchSize, max(b.opts.MemtableSize/8, 64<<10)))
	for i := range w.slots {
		if s := &w.slots[i]; s.used && s.dirty {
			b.stage(s)
			if w.batch.Len() >= limit {
				b.commitBuffer()
			}
		}
	}
	b.commitBuffer()
}

// dropBuffer writes the dirty entries and forgets every entry: a restore
// writes the store behind the buffer's back.
func (b *Backend[K]) dropBuffer() {
	w := &b.buf
	if w.index == nil {
		return
	}
	if b.db != nil {
		b.flushBuffer()
	}
	w.closeBatch()
	w.init(w.capacity)
	w.slots, w.free, w.hand, w.size = nil, nil, 0, 0
}

func (w *writeBuffer) closeBatch() {
	if w.batch != nil {
		w.batch.Close()
		w.batch = nil
	}
}
