// Package state holds keyed state (value, list, map, reducing),
// processing-time and event-time timers and operator (non-keyed) list state, with
// snapshots that are cheap for the task and written asynchronously.
//
// Backend is what a keyed operator uses; two implement it. KeyedBackend,
// here, is the heap backend: hash tables in memory, copy-on-write
// snapshots. Package lsm
// is the LSM backend: a Pebble store on local disk. Registration
// (RegisterValue and friends) takes any Backend: the heap backend gets
// typed states directly, a byte-oriented one (RawBackend) gets raw handles
// that typed adapters encode and decode with the state's codecs. Both
// write and read the same snapshot format, so their checkpoints are
// interchangeable.
//
// One backend serves one keyed operator subtask and is used only from
// that subtask's goroutine, so it takes no locks. A walkthrough:
//
//	b := state.NewKeyedBackend(keyCodec, keygroup.RangeFor(128, 4, 1), 128)
//	count, err := state.RegisterValue(b, "count", int64Codec)
//	...
//	b.SetCurrentKeyHash(k, h, kg)     // per record; h and kg computed by the runtime
//	n, _ := count.Value()
//	count.Update(n + 1)
//	b.Timers().Register(now + 60_000) // fires for k in a minute
//	b.EventTimers().Register(ts)      // fires for k once the watermark reaches ts
//
//	snap := b.Snapshot()              // at the barrier: O(states × key groups), no copying of entries
//	go func() {
//		offsets, err := snap.WriteBlocks(file)  // concurrently with further updates
//		snap.Release()
//	}()
//
//	// after a failure, in a subtask that may own other key groups:
//	b.Restore(ctx, []state.RestoreSource{{Name: path, Size: size, Open: openFile, KeyGroups: offsets}})
//	count, err = state.RegisterValue(b, "count", int64Codec) // decodes the restored bytes
//
// # Copy-on-write
//
// Each state keeps one hash table per key group (hashtab.go: open
// addressing over flat arrays, probed with the keyed operator's own key
// hash, so a record's key is hashed once; a value state's Update writes
// where its Value found the entry). Snapshot bumps an epoch and keeps
// references to the current tables; it copies no entries. The first write
// to a key group after a snapshot, while any snapshot is unreleased, clones
// that key group's table (two memmoves of O(keys in the group), once per
// group per checkpoint), so the snapshot's tables are never written again
// and WriteBlocks can read them from another goroutine. The inner Go map
// of a MapState entry is
// cloned the same way on its first write. List values are append-only
// slices: an append writes past the length a snapshot holds, so it is never
// seen by it. Once every snapshot is released, writes skip the clones.
//
// Values are stored as given, not copied. A value holding pointers, slices
// or maps must not be mutated after it is passed to Update, Add or Put, and
// a slice or map returned by Get must not be mutated: snapshots may still
// read them. Store fresh values instead.
//
// # Snapshot format
//
// WriteBlocks writes one block per non-empty key group:
//
//	block   = version(1 byte = 1) uvarint(keyGroup) uvarint(#sections) section*
//	section = string(name) kind(1 byte) uvarint(len) payload
//	payload = uvarint(#keys) (key state)*
//
// where a string is uvarint(len) bytes, keys and values use the codecs given
// at registration, and timers are sections with an empty name (which no
// state can have) whose keys are (key, uvarint-zigzag timestamp): one of
// kind timers (5) for processing time, one of kind event timers (6) for
// event time. Sections are sorted by name, then the processing-time
// timers, then the event-time timers; a checkpoint written before event
// time simply has no event-timer section and restores unchanged. The format is canonical: entries are in the order
// of their encoded key prefixed with its uvarint length, compared as bytes
// (ComparePrefixed), a map's entries likewise by encoded user key, and a
// list keeps its order; so equal state gives equal bytes in every backend.
// That order is the LSM store's key order, so the LSM backend copies
// entries as it scans; the heap backend sorts each key group's entries on
// the writer goroutine. Restore streams the
// blocks of its own key groups from any number of files (ForEachBlock: one
// block in memory at a time, each file checksummed to its end), so a rescaled
// subtask can gather its groups from several old subtasks. Bytes of a state
// that is not registered yet are kept and decoded at registration; if the
// state is never registered they are carried into later snapshots and named
// by UnrestoredStates.
//
// # Timers
//
// A backend has two independent timer sets, Timers (processing time) and
// EventTimers (event time), of the same type: one timer per (key,
// timestamp), fired by PopDue(t) with the processing time or the
// watermark, in timestamp order, then key group, then registration order.
// A checkpoint holds no registration order: restored timers count as
// registered in the order of their encoded keys, so a restore fires ties
// deterministically. Both sets live in memory in both backends (see
// package lsm's doc for why) and are snapshotted copy-on-write with the
// key groups, so a rescale redistributes them like keyed state.
//
// # Time to live
//
// A state registered with WithTTL(TTLConfig) stores each value, list
// element and map entry as (last-access timestamp, value); the timestamp
// comes from the backend's TTL clock (SetTTLClock: processing time in
// milliseconds, injected so that no backend reads the wall clock) and is
// renewed on writes, or also on reads (UpdateOnReadAndWrite). Expired
// values are never returned (unless ReturnExpiredIfNotCleanedUp, once) and
// are removed when a read finds them, and full snapshots of both backends
// leave them out (the heap backend as it writes blocks, the LSM backend as
// it copies entries; both give the same bytes). The LSM backend also
// sweeps its store incrementally (see package lsm). In the snapshot format
// a TTL state's kind has the KindTTL flag (0x80) and each stamped value is
// zigzag-varint(timestamp) then the value: restoring a TTL state from a
// checkpoint without TTL, or the reverse, is an ErrStateMismatch naming
// the state. The timestamps survive a restore, so a restored value expires
// when it would have. The wrapper is in the typed layer (ttl.go), shared by
// both backends; the stamped codec is what they store.
//
// Owns: keyed and operator state, timers, key-group snapshots and their
// canonical format. Must not touch: tasks, the runtime or checkpoint
// storage beyond the writer it is handed (checked by internal/archtest).
package state
