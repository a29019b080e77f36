// Package lsm is the LSM state backend (state.backend.type: lsm): keyed
// state in a Pebble store on local disk, one store per keyed operator
// subtask, so that state can be far larger than memory. It implements
// state.Backend and state.RawBackend; operators use it exactly as the heap
// backend, through state.RegisterValue and friends.
//
//	b, err := lsm.Open(keyCodec, keygroup.RangeFor(128, 4, 1), 128, lsm.Options{Dir: "/var/tmp/weir"})
//	defer b.Close()                                // removes the store's directory
//	count, err := state.RegisterValue(b, "count", int64Codec)
//	b.SetCurrentKey(k, kg)                         // encodes k once per record
//	n, _ := count.Value()                          // the write buffer, else one point read
//	count.Update(n + 1)                            // in place in the write buffer
//	if err := b.Err(); err != nil { ... }          // once per batch: I/O errors
//
// # Key layout
//
//	kg(2 bytes, big endian) | state id(2) | uvarint(len(key)) key | uvarint(len(ns)) ns | [uvarint(len(uk)) uk]
//
// The key group leads, so the key groups of a range are one contiguous
// range of the store: a rescaled store keeps its groups with two range
// deletes, and an incremental restore will ingest files and cut them to its
// range (docs/design/lsm-incremental.md). The state id is assigned at
// registration and recorded in a catalogue under the prefix 0xffff. The key
// is the key codec's encoding, the namespace is empty (weir has no windows
// yet). Value and reducing states have one store key per key; a list is
// one store key whose value is a sequence of frames (uvarint length,
// element) and Add is a Pebble merge, so appending reads nothing; a map
// state has one store key per user key below the key's store key, so
// Get/Put/Remove touch one entry, iteration is a range scan and Clear is a
// range delete. Len counts by scanning.
//
// # Write buffer
//
// Value, reducing and list states are read and written through a bounded
// cache in front of Pebble (wbuf.go, state.backend.lsm.write-buffer-size,
// 64 MiB by default): a Go map from store key to value with
// read-your-writes, so that a read-modify-write of a buffered key is a map
// lookup and an update in place instead of a Pebble point read (memtables,
// then the files of each level) and a memtable insert. A read that misses keeps what it read (also "no value"); a
// clock sweep evicts entries not used since the hand last passed down to
// 15/16 of the capacity and writes the dirty ones in one batch. Entries
// above an eighth of the capacity (long lists) are written through. Map
// state entries are buffered too, grouped by their map: an iteration (and
// Len) first writes back its map's dirty entries and then reads the
// store's range, a Clear forgets them before its range delete. Every scan of the store first writes back every
// dirty entry: Snapshot and IncrementalSnapshot (so that a checkpoint
// holds every write before its barrier and none after), Keys, and
// restores (which also empty it). The TTL sweep judges a buffered key by
// its buffered value.
//
// # Snapshots
//
// Snapshot (the synchronous part of a checkpoint) writes back the write
// buffer, takes a Pebble snapshot, which costs a sequence number, and
// captures the timers copy-on-write.
// WriteBlocks, on the writer goroutine, iterates the snapshot key group by
// key group and writes the canonical block format of package state. The
// store's key order is the canonical entry order, so entries are copied as
// met, without sorting or decoding; the heap backend writes identical bytes
// for identical state. Checkpoints of both backends are therefore
// interchangeable, and rescaling redistributes key-group blocks as for the
// heap backend. Restoring decodes keys and values only to find their
// lengths (the canonical format does not carry them) and writes the store
// through batches as it streams the files; a state not registered yet has
// its payloads staged in the store and decoded at registration (stage.go).
//
// A tool that reads a checkpoint without its job (weir state export,
// package stateproc) opens an incremental checkpoint's store with
// OpenStore: its files fetched into a folder of their own and opened
// read-only, and Store.WriteBlocks writes the canonical blocks a full
// snapshot of the subtask would, so such tools read one format only.
//
// # Timers
//
// Both timer sets, processing time (Timers) and event time (EventTimers),
// stay in memory, in the same copy-on-write structure as the heap
// backend's (state.Timers), and are snapshotted in the canonical format,
// each in its own section. An incremental checkpoint writes both into its
// one canonical timers file; a file written before event time holds only
// the processing-time section and restores with no event-time timers.
// A timer queue needs the earliest timer after every batch; in memory that
// is a heap peek, in the store a seek over a second, time-ordered index
// kept in step with the per-key entries. Timers are far
// fewer than state entries in the jobs weir serves (one or a few per active
// key), so their memory is small next to the state the store moves off the
// heap. Jobs with more timers than memory would need them in the store; the
// key layout leaves room for that (a time-ordered range per key group under
// a reserved state id).
//
// # Time to live
//
// TTL states (state.WithTTL) store each value, list element and map value
// with a zigzag-varint last-access timestamp in front. Reads remove the
// expired values they find and canonical snapshots skip them by reading
// that varint. Pebble v2.1 has no compaction filter, so keys that are never
// read again are removed by an incremental sweep (ttlcleanup.go): every
// 1024 records a bounded step examines the next 64 store keys from a
// cursor that wraps around, deletes expired values and map entries and
// rewrites lists without their expired elements. Incremental checkpoints
// upload the store's files as they are, expired values included until the
// sweep or a read removed them.
//
// # Memory and files
//
// Memory per store is bounded by the block cache (block-cache-size), two
// memtables (memtable-size each: writes stall while one memtable is
// flushed and a second one is full), both outside the Go heap, and the
// write buffer (write-buffer-size, counted per entry with its overhead,
// plus the value buffers of freed slots, at most a 16th), in the Go heap,
// where the collector's headroom doubles it at GOGC=100; Options.MemoryBound
// adds these up. The write-ahead log is off: the store
// lives only as long as its task attempt, and checkpoints make state
// durable. The store's directory is made under Options.Dir and removed by
// Close; a process killed before Close leaves it behind (weir-lsm-* in that
// folder), to be cleaned up by hand or by the TaskManager at start.
//
// Owns: the Pebble store of one subtask, its key layout, incremental
// snapshots and restores. Must not touch: checkpoint storage's layout
// beyond the files it is handed, or the runtime (checked by
// internal/archtest).
package lsm
