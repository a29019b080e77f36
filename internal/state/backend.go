package state

import (
	"errors"
	"fmt"
	"iter"
	"slices"
	"sort"
	"strings"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/keygroup"
)

// ErrStateMismatch marks a state registered (or restored) under a name that
// already belongs to a state of another kind or type.
var ErrStateMismatch = errors.New("state kind or type mismatch")

// ErrNoCurrentKey marks a write to keyed state while no key is current:
// before the first SetCurrentKey, which is the keyed function's Open. The
// write would land under the zero key (the heap backend) or nowhere (the
// LSM backend), so the backends refuse it and report it through Err.
var ErrNoCurrentKey = errors.New("keyed state written with no current key")

// NoCurrentKey is the error of a write to the keyed state name with no
// current key.
func NoCurrentKey(name string) error {
	return fmt.Errorf("state %q: %w: keyed state is per key, and a key is current only in ProcessElement and OnTimer (the record's or the timer's key), not in Open: register states in Open, use them in ProcessElement and OnTimer", name, ErrNoCurrentKey)
}

// KeyedBackend is the heap backend: it holds the keyed state and timers of
// one keyed operator subtask for the key groups of its range in Go maps. It
// is used only from the task's goroutine and takes no locks; only a
// KeyedSnapshot's WriteBlocks runs elsewhere.
type KeyedBackend[K comparable] struct {
	keys codec.Codec[K]
	kgs  keygroup.Range
	maxP int
	cow  *cow

	key K
	h   uint32 // the current key's hash (hash(key))
	// seq counts SetCurrentKey calls: a state's cached position is for
	// one. It is noKey until the first, and the states' writes check it
	// (one compare of a field next to the key and hash they load anyway)
	// to refuse a write with no current key (NoCurrentKey).
	seq uint64
	cur int // current key group, as an index from kgs.Start
	// hash is the keyed operator's stable key hash (keygroup.Hasher), which
	// the tables use too, so that a record is hashed once.
	hash func(K) uint32
	// large caches PrefetchWorthwhile's answer, refreshed every 64th call.
	large     bool
	sizeCalls uint
	n         int // kgs.Len(), kept here for SetCurrentKey's bounds check

	states map[string]registered
	order  []registered // sorted by name, for deterministic snapshots
	timers *Timers[K]   // processing time
	events *Timers[K]   // event time

	ttlNow func() int64 // the TTL clock (SetTTLClock)

	err error // the first write with no current key (Err)

	// pending holds restored bytes of states not registered yet.
	pending map[string]*pendingState

	// SchemaTable resolves restored states' schemas and records the
	// registered ones' (schemas.go).
	SchemaTable
}

// pendingState is the raw restored bytes of one unregistered state.
type pendingState struct {
	kind   Kind
	blocks [][]byte // per key group index; nil where none
}

// NewKeyedBackend returns an empty backend for the key groups kgs of an
// operator with the given max parallelism; keys encodes the operator's keys
// in snapshots. It panics if kgs is empty or not within [0, maxParallelism),
// which is a bug in the caller.
func NewKeyedBackend[K comparable](keys codec.Codec[K], kgs keygroup.Range, maxParallelism int) *KeyedBackend[K] {
	return NewHashedKeyedBackend(keys, kgs, maxParallelism, keyHasher[K]())
}

// NewHashedKeyedBackend is NewKeyedBackend whose tables hash keys with
// hash: the keyed operator passes the hash it finds key groups with, so
// that SetCurrentKeyHash can hand the tables the hash it has already
// computed for the record.
func NewHashedKeyedBackend[K comparable](keys codec.Codec[K], kgs keygroup.Range, maxParallelism int, hash func(K) uint32) *KeyedBackend[K] {
	if kgs.Start < 0 || kgs.End > maxParallelism || kgs.Len() <= 0 {
		panic(fmt.Sprintf("state: key-group range %s is empty or outside [0, %d)", kgs, maxParallelism))
	}
	b := &KeyedBackend[K]{
		keys:    keys,
		kgs:     kgs,
		n:       kgs.Len(),
		maxP:    maxParallelism,
		cow:     &cow{},
		seq:     noKey, // a state's cached position of sequence 0 is never valid
		hash:    hash,
		states:  map[string]registered{},
		pending: map[string]*pendingState{},
	}
	b.timers = newTimers(keys, kgs, ProcessingTime, b.cow, b.hash, b.currentKey, b.SetCurrentKey)
	b.events = newTimers(keys, kgs, EventTime, b.cow, b.hash, b.currentKey, b.SetCurrentKey)
	InitKeyedSchemas[K](&b.SchemaTable)
	return b
}

// noKey is KeyedBackend.seq before the first SetCurrentKey.
const noKey = 1

// refuse records a write to state name with no current key; the
// operator finds it through Err.
func (b *KeyedBackend[K]) refuse(name string) {
	if b.err == nil {
		b.err = NoCurrentKey(name)
	}
}

func (b *KeyedBackend[K]) currentKey() (K, int) { return b.key, b.cur + b.kgs.Start }

// SetTTLClock gives the backend the clock of its TTL states (processing
// time, unix milliseconds); states registered with WithTTL read it on each
// access. Set it before registering them.
func (b *KeyedBackend[K]) SetTTLClock(now func() int64) { b.ttlNow = now }

// TTLClock returns the clock set by SetTTLClock, or nil.
func (b *KeyedBackend[K]) TTLClock() func() int64 { return b.ttlNow }

// Err returns the first write with no current key (ErrNoCurrentKey), or
// nil: the heap backend's state accesses cannot fail otherwise.
func (b *KeyedBackend[K]) Err() error { return b.err }

// Close does nothing: the heap backend holds only memory.
func (b *KeyedBackend[K]) Close() error { return nil }

// SetCurrentKey makes k, of key group kg, the key that states and timers
// act on. The runtime calls it per record with kg already computed. It
// panics if kg is outside the backend's range: the record was routed to the
// wrong subtask.
func (b *KeyedBackend[K]) SetCurrentKey(k K, kg int) { b.SetCurrentKeyHash(k, b.hash(k), kg) }

// SetCurrentKeyHash is SetCurrentKey for a caller that has already hashed
// the key: h must be the backend's hash of k (the one given to
// NewHashedKeyedBackend, or keygroup.Hasher's). The states' tables probe with it, so a record's
// key is hashed once.
func (b *KeyedBackend[K]) SetCurrentKeyHash(k K, h uint32, kg int) {
	i := kg - b.kgs.Start
	if uint(i) >= uint(b.n) {
		panic(fmt.Sprintf("state: key group %d is outside this subtask's range %s", kg, b.kgs))
	}
	b.key, b.h, b.cur = k, h, i
	b.seq++
}

// Prefetch loads the memory that the states' first probe for a key of hash
// h in key group kg will read, and returns a byte of it (so the loads
// are not optimized away; callers fold it into a value they keep). The
// keyed operator calls it for every record of a batch before processing
// the first: the loads are independent, so the CPU overlaps their cache
// misses, where the probes of the processing loop, each waiting for the
// user function before it, would take them one at a time.
func (b *KeyedBackend[K]) Prefetch(h uint32, kg int) uint8 {
	i := kg - b.kgs.Start
	if uint(i) >= uint(b.n) {
		return 0
	}
	var x uint8
	for _, s := range b.order {
		x ^= s.touch(i, h)
	}
	return x
}

// PrefetchWorthwhile reports whether Prefetch pays: when the states hold
// more entries than fit in a core's cache. With fewer, the extra pass over
// the batch costs more than the misses it hides (BenchmarkKeyedProcessPush:
// at 1,000 and 10,000 keys prefetching was 30 % slower, at 1,000,000 keys
// 1.2-1.9x faster). The count is refreshed every 64 calls.
func (b *KeyedBackend[K]) PrefetchWorthwhile() bool {
	if b.sizeCalls%64 == 0 {
		n := 0
		for _, s := range b.order {
			n += s.size()
		}
		b.large = n > prefetchEntries
	}
	b.sizeCalls++
	return b.large
}

// prefetchEntries is the state size, in entries, above which the keyed
// operator prefetches: 64 Ki entries of 24-byte slots at the tables' load
// are 2-4 MiB, beyond this machine's 512 KiB L2 per core and near its L3
// share.
const prefetchEntries = 1 << 16

// CurrentKey returns the key set by the last SetCurrentKey.
func (b *KeyedBackend[K]) CurrentKey() K { return b.key }

// CurrentKeyGroup returns the key group set by the last SetCurrentKey.
func (b *KeyedBackend[K]) CurrentKeyGroup() int { return b.cur + b.kgs.Start }

// KeyGroups returns the backend's key-group range.
func (b *KeyedBackend[K]) KeyGroups() keygroup.Range { return b.kgs }

// Timers returns the backend's processing-time timers.
func (b *KeyedBackend[K]) Timers() *Timers[K] { return b.timers }

// EventTimers returns the backend's event-time timers.
func (b *KeyedBackend[K]) EventTimers() *Timers[K] { return b.events }

// NumKeys approximates the number of keys with state: the key count of the
// registered state that has the most keys. It walks every key group, so
// call it for metrics, not per record.
func (b *KeyedBackend[K]) NumKeys() int {
	n := 0
	for _, s := range b.order {
		n = max(n, s.size())
	}
	return n
}

// UnrestoredStates names, sorted, the restored states that were never
// registered. The runtime calls it after the operator opened and fails the
// task if the list is not empty, since their state would otherwise be
// silently unused.
func (b *KeyedBackend[K]) UnrestoredStates() []string {
	names := make([]string, 0, len(b.pending))
	for name := range b.pending {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// DropUnrestored forgets the restored states never registered.
func (b *KeyedBackend[K]) DropUnrestored() error {
	for name := range b.pending {
		b.forgetRestored(name)
	}
	clear(b.pending)
	return nil
}

// lookup returns the state registered as name if it has type T; ok is
// false if there is none.
func lookup[T registered, K comparable](b *KeyedBackend[K], name string, want string) (st T, ok bool, err error) {
	r, found := b.states[name]
	if !found {
		if name == "" {
			return st, false, errors.New("register state: empty name: give the state a name")
		}
		return st, false, nil
	}
	st, ok = r.(T)
	if !ok {
		return st, false, fmt.Errorf("register state %q as %s: it is already registered as %s; use another name: %w", name, want, r.types(), ErrStateMismatch)
	}
	return st, true, nil
}

// add registers s and decodes any restored bytes waiting for it.
func (b *KeyedBackend[K]) add(s registered) error {
	name := s.stateName()
	if p, ok := b.pending[name]; ok {
		if p.kind != s.stateKind() {
			return fmt.Errorf("register state %q as %s: the restored checkpoint holds it as %s; keep the kind or use another name: %w", name, s.types(), p.kind, ErrStateMismatch)
		}
		for i, blk := range p.blocks {
			if blk == nil {
				continue
			}
			if err := s.restoreGroup(i, blk); err != nil {
				return fmt.Errorf("restore state %q key group %d: %w", name, i+b.kgs.Start, err)
			}
		}
		delete(b.pending, name)
	}
	b.states[name] = s
	i, _ := slices.BinarySearchFunc(b.order, name, func(r registered, n string) int {
		return strings.Compare(r.stateName(), n)
	})
	b.order = slices.Insert(b.order, i, s)
	return nil
}

// Keys yields the keys with an entry in the state name, key group by key
// group, in map order within a group.
func (b *KeyedBackend[K]) Keys(name string) iter.Seq2[K, int] {
	return func(yield func(K, int) bool) {
		r, ok := b.states[name].(interface {
			eachKey(i int, fn func(K) bool) bool
		})
		if !ok {
			return
		}
		for i := range b.n {
			kg := b.kgs.Start + i
			if !r.eachKey(i, func(k K) bool { return yield(k, kg) }) {
				return
			}
		}
	}
}
