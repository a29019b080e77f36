package state

import "sync/atomic"

// cow is the copy-on-write clock shared by all tables of a backend.
//
// A map whose owner epoch is older than the current epoch may be referenced
// by a snapshot taken since; while any snapshot is live it must be cloned
// before a write. The interleaving that makes this necessary: the task takes
// snapshot 5 (epoch becomes 5, the snapshot holds map M), hands it to the
// writer goroutine, and processes the next record for a key in M. Writing M
// in place would race with the writer's reads and put post-barrier data into
// checkpoint 5; writing a clone leaves M as it was at the barrier.
type cow struct {
	// epoch is bumped by every Snapshot; only the task goroutine touches it.
	epoch uint64
	// live counts snapshots not yet released. Release runs on the writer
	// goroutine after its last read, so observing zero here (an atomic load,
	// which orders after that Release) means no snapshot can read any map:
	// writes may adopt old maps in place instead of cloning them.
	live atomic.Int64
}

// mustCopy reports whether a map owned by epoch owner must be cloned before
// a write, and otherwise marks it adopted.
func (c *cow) mustCopy(owner *uint64) bool {
	if *owner == c.epoch {
		return false
	}
	*owner = c.epoch
	return c.live.Load() > 0
}

// group is one key group's entries of one table.
type group[TK comparable, S any] struct {
	htab[TK, S]
	owner uint64
}

// table holds the entries of one state (or of the timers), one hash table
// per key group of the backend's range, indexed from the range start. Every
// access takes the key's hash, computed with hash (the keyed operator's
// stable key hash for states, see KeyedBackend.SetCurrentKeyHash).
type table[TK comparable, S any] struct {
	cow    *cow
	hash   func(TK) uint32
	groups []group[TK, S]
}

func newTable[TK comparable, S any](c *cow, hash func(TK) uint32, n int) table[TK, S] {
	return table[TK, S]{cow: c, hash: hash, groups: make([]group[TK, S], n)}
}

func (t *table[TK, S]) get(i int, k TK, h uint32) (S, bool) { return t.groups[i].get(k, h) }

// has reports whether group i has an entry for k.
func (t *table[TK, S]) has(i int, k TK, h uint32) bool {
	_, ok := t.groups[i].find(k, h)
	return ok
}

// writable returns group i's table, ready for writing: cloned first if a
// live snapshot may read it.
func (t *table[TK, S]) writable(i int) *htab[TK, S] {
	g := &t.groups[i]
	if t.cow.mustCopy(&g.owner) {
		g.htab = g.htab.clone()
	}
	return &g.htab
}

// slot returns a pointer to k's entry in group i, inserting the zero entry
// if there is none, and whether there was one. The pointer is valid until
// the next write to the table.
func (t *table[TK, S]) slot(i int, k TK, h uint32) (*S, bool) {
	return t.writable(i).slot(k, h, t.hash)
}

// set makes s the entry of k in group i.
func (t *table[TK, S]) set(i int, k TK, h uint32, s S) {
	p, _ := t.slot(i, k, h)
	*p = s
}

// remove deletes k from group i, cloning only if k is present.
func (t *table[TK, S]) remove(i int, k TK, h uint32) {
	if t.has(i, k, h) {
		t.writable(i).del(k, h, t.hash)
	}
}

// freeze returns the current tables; Snapshot bumps the epoch right before,
// so the task never writes them again while the snapshot is live.
func (t *table[TK, S]) freeze() []htab[TK, S] {
	out := make([]htab[TK, S], len(t.groups))
	for i := range t.groups {
		out[i] = t.groups[i].htab
	}
	return out
}

// size is the number of entries across all key groups.
func (t *table[TK, S]) size() int {
	n := 0
	for i := range t.groups {
		n += t.groups[i].n
	}
	return n
}
