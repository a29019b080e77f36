package state

import (
	"maps"
	"sync/atomic"
)

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
	m     map[TK]S
	owner uint64
}

// table holds the entries of one state (or of the timers), one map per key
// group of the backend's range, indexed from the range start.
type table[TK comparable, S any] struct {
	cow    *cow
	groups []group[TK, S]
}

func newTable[TK comparable, S any](c *cow, n int) table[TK, S] {
	return table[TK, S]{cow: c, groups: make([]group[TK, S], n)}
}

func (t *table[TK, S]) get(i int, k TK) (S, bool) {
	s, ok := t.groups[i].m[k]
	return s, ok
}

// mut returns group i's map, ready for writing.
func (t *table[TK, S]) mut(i int) map[TK]S {
	g := &t.groups[i]
	if t.cow.mustCopy(&g.owner) {
		g.m = maps.Clone(g.m)
	}
	if g.m == nil {
		g.m = make(map[TK]S)
	}
	return g.m
}

// remove deletes k from group i, cloning only if k is present.
func (t *table[TK, S]) remove(i int, k TK) {
	if _, ok := t.groups[i].m[k]; ok {
		delete(t.mut(i), k)
	}
}

// freeze returns the current maps; Snapshot bumps the epoch right before,
// so the task never writes them again while the snapshot is live.
func (t *table[TK, S]) freeze() []map[TK]S {
	out := make([]map[TK]S, len(t.groups))
	for i := range t.groups {
		out[i] = t.groups[i].m
	}
	return out
}

// size is the number of entries across all key groups.
func (t *table[TK, S]) size() int {
	n := 0
	for i := range t.groups {
		n += len(t.groups[i].m)
	}
	return n
}
