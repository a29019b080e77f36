package lsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

// Backend is the LSM keyed state backend of one keyed operator subtask: a
// Pebble store in a directory of its own. Like the heap backend it is used
// only from the task's goroutine; Pebble itself is safe for the snapshot
// writer's concurrent reads.
type Backend[K comparable] struct {
	db    *pebble.DB
	cache *pebble.Cache
	dir   string
	keys  codec.Codec[K]
	kgs   keygroup.Range

	key K
	kg  int
	// cur is the store key of the current key (kg, a state id slot,
	// length-prefixed key, empty namespace). Handles write their state id
	// into it and use it as is, so a value access builds no key.
	cur []byte
	// kenc is the current key's encoding; scratch for the map suffix and
	// read copies.
	kenc, mkey, val []byte

	states  map[string]*registration
	nextSID uint16
	pending map[string]*pendingState
	timers  *state.Timers[K] // processing time
	events  *state.Timers[K] // event time

	buf writeBuffer // recently read and written entries (wbuf.go)

	ttlNow  func() int64 // the TTL clock (SetTTLClock)
	cleanup ttlCleanup   // the incremental sweep of TTL states (ttlcleanup.go)

	err  error
	live atomic.Int64 // unreleased snapshots

	// Incremental checkpoints (incremental.go).
	opts    Options
	popts   *pebble.Options
	storeID string
	inc     incState
	// catalogue is the state catalogue of a store restored from files:
	// a registration adopts the id its state has there.
	catalogue map[string]checkpoint.StoreState

	// SchemaTable resolves restored states' schemas and records the
	// registered ones' (see package state's schemas.go).
	state.SchemaTable
}

// registration is one registered state: its id, kind and typed handle.
type registration struct {
	spec  state.StateSpec
	sid   uint16
	typed any
}

// pendingState is a restored state that is not registered yet; its
// canonical payloads are staged in the store (stage.go).
type pendingState struct {
	kind state.Kind
}

var (
	_ state.Backend[int] = (*Backend[int])(nil)
	_ state.RawBackend   = (*Backend[int])(nil)
)

// Open makes a store for the key groups kgs of an operator with the given
// max parallelism, in a new directory under opts.Dir. Close removes it.
func Open[K comparable](keys codec.Codec[K], kgs keygroup.Range, maxParallelism int, opts Options) (*Backend[K], error) {
	if kgs.Start < 0 || kgs.End > maxParallelism || kgs.Len() <= 0 || maxParallelism > 1<<15 {
		return nil, fmt.Errorf("lsm state backend: key-group range %s is empty or outside [0, %d), or the max parallelism exceeds 32768", kgs, maxParallelism)
	}
	if err := opts.fill(); err != nil {
		return nil, err
	}
	parent := opts.Dir
	if parent == "" {
		parent = os.TempDir()
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("lsm state backend: create %s: %w; set state.backend.lsm.dir to a writable folder", parent, err)
	}
	dir, err := os.MkdirTemp(parent, "weir-lsm-"+checkpoint.FileNamePart(opts.Name)+"-")
	if err != nil {
		return nil, fmt.Errorf("lsm state backend: make a store folder in %s: %w; set state.backend.lsm.dir to a writable folder", parent, err)
	}
	storeID, err := newStoreID()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	b := &Backend[K]{
		cache: pebble.NewCache(opts.BlockCacheSize), dir: dir, keys: keys, kgs: kgs,
		states:  map[string]*registration{},
		pending: map[string]*pendingState{},
		opts:    opts, storeID: storeID,
	}
	b.inc.init()
	b.buf.init(opts.WriteBufferSize)
	state.InitKeyedSchemas[K](&b.SchemaTable)
	if err := b.openDB(); err != nil {
		b.cache.Unref()
		os.RemoveAll(dir)
		return nil, err
	}
	b.timers = state.NewTimers(keys, kgs, state.ProcessingTime, b.currentKey, b.SetCurrentKey)
	b.events = state.NewTimers(keys, kgs, state.EventTime, b.currentKey, b.SetCurrentKey)
	// No key is current until the first SetCurrentKey: b.cur stays nil,
	// so that the states refuse writes (keyed); the key group is in range
	// for the timers, as the heap backend's.
	b.kg = kgs.Start
	return b, nil
}

// Dir is the store's directory: the Pebble store in its "db" folder, the
// local copies of incremental checkpoints next to it.
func (b *Backend[K]) Dir() string { return b.dir }

// dbDir is the Pebble store's folder.
func (b *Backend[K]) dbDir() string { return filepath.Join(b.dir, "db") }

// pebbleOptions are the options of every store; a fresh value per call,
// since Pebble fills in its defaults.
func (b *Backend[K]) pebbleOptions() *pebble.Options { return storeOptions(b.cache, b.opts) }

// storeOptions are pebbleOptions for a store with cache and the filled
// opts; a read-only Store opens checkpoint files with them too, since the
// list merger and the format are part of what the files mean.
func storeOptions(cache *pebble.Cache, opts Options) *pebble.Options {
	o := &pebble.Options{
		Cache:                       cache,
		MemTableSize:                uint64(opts.MemtableSize),
		MemTableStopWritesThreshold: memtableStopWrites,
		// Durability comes from checkpoints: a store never outlives its
		// task attempt, so a write-ahead log would only cost.
		DisableWAL: true,
		Merger:     listMerger,
		Logger:     pebbleLogger{opts.Logger},
		// Incremental checkpoints share the store's files, so Pebble's
		// format is part of weir's checkpoint format (docs/formats.md):
		// pinned, so that a Pebble upgrade whose default moves does not
		// change what checkpoints hold unnoticed. It is Pebble v2's
		// default (its oldest supported format, 13); the lsm goldens
		// restore files written in it.
		FormatMajorVersion: pebble.FormatFlushableIngest,
	}
	// Bloom filters on every level: a state read (value state's Get on
	// each update) otherwise reads a block of every L0 file and level it
	// passes; with them a miss costs a filter probe. 10 bits per key is
	// about 1% false positives.
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	// Let L0 files pile up longer before they are compacted into the
	// levels below. Each checkpoint flushes the memtable into one small L0
	// file; an incremental checkpoint uploads only files the previous one
	// did not have, so while L0 accumulates it uploads just that file. A
	// compaction rewrites every file its key range overlaps, with random
	// keys the whole base level, and the next checkpoint uploads all of
	// it. Fewer compactions mean fewer such full-size uploads, at the
	// price of more L0 files per read (cheap with the bloom filters).
	o.L0CompactionThreshold = l0CompactionThreshold
	o.L0StopWritesThreshold = 4 * l0CompactionThreshold
	o.EnsureDefaults()
	return o
}

// l0CompactionThreshold is the L0 read amplification at which Pebble
// compacts L0 (its default is 4); see pebbleOptions.
const l0CompactionThreshold = 16

// openDB opens (or creates) the Pebble store in dbDir.
func (b *Backend[K]) openDB() error {
	b.popts = b.pebbleOptions()
	db, err := pebble.Open(b.dbDir(), b.popts)
	if err != nil {
		return fmt.Errorf("lsm state backend: open store in %s: %w", b.dbDir(), err)
	}
	b.db = db
	return nil
}

// SetCurrentKey encodes k once; every state access of the record reuses it.
func (b *Backend[K]) SetCurrentKey(k K, kg int) {
	if !b.kgs.Contains(kg) {
		panic(fmt.Sprintf("state: key group %d is outside this subtask's range %s", kg, b.kgs))
	}
	b.key, b.kg = k, kg
	b.kenc = b.keys.Append(b.kenc[:0], k)
	b.cur = appendKey(b.cur[:0], kg, 0, b.kenc, nil)
	if b.cleanup.ttl != nil {
		b.tick()
	}
}

func (b *Backend[K]) currentKey() (K, int) { return b.key, b.kg }

// CurrentKey returns the key set by the last SetCurrentKey.
func (b *Backend[K]) CurrentKey() K { return b.key }

// CurrentKeyGroup returns the key group set by the last SetCurrentKey.
func (b *Backend[K]) CurrentKeyGroup() int { return b.kg }

// KeyGroups returns the backend's key-group range.
func (b *Backend[K]) KeyGroups() keygroup.Range { return b.kgs }

// Timers returns the processing-time timers; they are kept in memory (see
// the package doc).
func (b *Backend[K]) Timers() *state.Timers[K] { return b.timers }

// EventTimers returns the event-time timers, in memory like Timers and
// snapshotted in a section of their own.
func (b *Backend[K]) EventTimers() *state.Timers[K] { return b.events }

// timerSections captures both timer sets for a snapshot; release releases
// both captures.
func (b *Backend[K]) timerSections() (secs [2]state.Section, release func()) {
	var r [2]func()
	secs[0], r[0] = b.timers.SnapshotSection()
	secs[1], r[1] = b.events.SnapshotSection()
	return secs, func() { r[0](); r[1]() }
}

// SetTTLClock gives the backend the clock of its TTL states (processing
// time, unix milliseconds); see state.WithTTL. Set it before registering.
func (b *Backend[K]) SetTTLClock(now func() int64) { b.ttlNow = now }

// TTLClock returns the clock set by SetTTLClock, or nil.
func (b *Backend[K]) TTLClock() func() int64 { return b.ttlNow }

// Err returns the first error a state access met.
func (b *Backend[K]) Err() error { return b.err }

func (b *Backend[K]) fail(err error) {
	if b.err == nil {
		b.err = fmt.Errorf("lsm state backend (%s): %w", b.dir, err)
	}
}

// DropUnrestored deletes the restored states never registered: their
// staged payloads, and the entries and catalogue rows of those linked from
// store files.
func (b *Backend[K]) DropUnrestored() error {
	batch := b.db.NewBatch()
	defer batch.Close()
	for name := range b.pending {
		lo, hi := b.stageBounds(name)
		if err := batch.DeleteRange(lo, hi, nil); err != nil {
			return fmt.Errorf("drop restored state %q: %w", name, err)
		}
		b.ForgetRestored(name)
	}
	for name, c := range b.catalogue {
		for kg := b.kgs.Start; kg < b.kgs.End; kg++ {
			if err := batch.DeleteRange(appendStatePrefix(nil, kg, c.ID), appendStatePrefix(nil, kg, c.ID+1), nil); err != nil {
				return fmt.Errorf("drop restored state %q: %w", name, err)
			}
		}
		if err := batch.Delete(append(append([]byte(nil), metaPrefix...), name...), nil); err != nil {
			return fmt.Errorf("drop restored state %q: %w", name, err)
		}
		b.ForgetRestored(name)
	}
	if err := batch.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("drop restored states: %w", err)
	}
	clear(b.pending)
	clear(b.catalogue)
	return nil
}

// UnrestoredStates names, sorted, the restored states never registered.
func (b *Backend[K]) UnrestoredStates() []string {
	names := make([]string, 0, len(b.pending)+len(b.catalogue))
	for name := range b.pending {
		names = append(names, name)
	}
	for name := range b.catalogue {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// RegisterRaw registers a state described by spec; see state.RawBackend.
func (b *Backend[K]) RegisterRaw(spec state.StateSpec) (any, error) {
	if r, ok := b.states[spec.Name]; ok {
		if r.spec.Kind != spec.Kind || r.spec.Desc != spec.Desc {
			return nil, fmt.Errorf("register state %q as %s: it is already registered as %s; use another name: %w", spec.Name, spec.Desc, r.spec.Desc, state.ErrStateMismatch)
		}
		return r.typed, nil
	}
	if p, ok := b.pending[spec.Name]; ok && p.kind != spec.Kind {
		return nil, fmt.Errorf("register state %q as %s: the restored checkpoint holds it as %s; keep the kind or use another name: %w", spec.Name, spec.Desc, p.kind, state.ErrStateMismatch)
	}
	if b.nextSID == maxStates {
		return nil, fmt.Errorf("register state %q: an operator may have at most %d keyed states", spec.Name, maxStates)
	}
	r := &registration{spec: spec, sid: b.nextSID}
	c, linked := b.catalogue[spec.Name]
	if linked {
		// Restored from store files: the entries are under this id.
		if state.Kind(c.Kind) != spec.Kind {
			return nil, fmt.Errorf("register state %q as %s: the restored checkpoint holds it as %s; keep the kind or use another name: %w", spec.Name, spec.Desc, state.Kind(c.Kind), state.ErrStateMismatch)
		}
		r.sid = c.ID
		if spec.Convert != nil || spec.ConvertUserKey != nil {
			// Written under an older schema: rewrite the entries under a
			// fresh id (migrate.go), so the store holds one encoding.
			if err := b.migrate(r, b.nextSID); err != nil {
				return nil, err
			}
			linked = false
		}
	}
	// The catalogue makes the store self-describing, which an incremental
	// restore (files without a canonical snapshot) will need.
	meta := append(append([]byte(nil), metaPrefix...), spec.Name...)
	if err := b.db.Set(meta, binary.BigEndian.AppendUint16([]byte{byte(spec.Kind)}, r.sid), pebble.NoSync); err != nil {
		return nil, fmt.Errorf("register state %q: %w", spec.Name, err)
	}
	if _, ok := b.pending[spec.Name]; ok {
		if err := b.ingest(r); err != nil {
			return nil, err
		}
		delete(b.pending, spec.Name)
	}
	delete(b.catalogue, spec.Name)
	if !linked {
		b.nextSID++
	}
	switch spec.Kind.Base() {
	case state.KindValue, state.KindReducing:
		r.typed = spec.Wrap(&valueHandle[K]{b: b, sid: r.sid})
	case state.KindList:
		r.typed = spec.Wrap(&listHandle[K]{b: b, sid: r.sid})
	case state.KindMap:
		r.typed = spec.Wrap(&mapHandle[K]{b: b, sid: r.sid})
	default:
		return nil, fmt.Errorf("register state %q: unknown kind %s", spec.Name, spec.Kind)
	}
	b.states[spec.Name] = r
	b.cleanup.addTTLState(r.sid, spec)
	return r.typed, nil
}

// Close closes the store and removes its directory. Every snapshot must
// have been released; the runtime waits for its snapshot goroutines before
// it closes operators.
func (b *Backend[K]) Close() error {
	if b.cache == nil {
		return nil
	}
	var errs []error
	if n := b.live.Load(); n > 0 {
		errs = append(errs, fmt.Errorf("lsm state backend: closed with %d unreleased snapshots (a bug in the caller)", n))
	}
	b.buf.closeBatch() // the store is removed: nothing buffered need be written
	if b.db != nil {   // nil after a restore that failed between stores
		errs = append(errs, b.db.Close())
	}
	b.db = nil
	b.cache.Unref()
	b.cache = nil
	errs = append(errs, os.RemoveAll(b.dir))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close lsm state backend in %s: %w", b.dir, err)
	}
	return nil
}

// pebbleLogger passes Pebble's errors to the task's logger and drops its
// informational messages (flushes and compactions of a store that lives as
// long as a task attempt).
type pebbleLogger struct {
	l interface{ Error(string, ...any) }
}

func (p pebbleLogger) Infof(string, ...any) {}
func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error("lsm state backend", "error", fmt.Sprintf(format, args...))
}
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error("lsm state backend: fatal", "error", msg)
	panic("lsm state backend: " + msg)
}
