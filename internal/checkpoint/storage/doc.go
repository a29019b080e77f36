// Package storage is weir's filesystem checkpoint storage: where task state
// files and checkpoint metadata live on disk, how they are written durably,
// and how the newest usable checkpoint is found again after a crash.
//
// Layout, one directory per job and one per checkpoint:
//
//	<root>/<jobID>/chk-<n>/<state files>   written by tasks (WriteFile)
//	<root>/<jobID>/chk-<n>/_metadata       written last by the JobManager
//
// A checkpoint exists only once its _metadata exists and verifies. The
// metadata is written to _metadata.tmp, synced, renamed into place and the
// directory synced, so a crash leaves either no _metadata or a whole one.
// Everything it references carries a size and a CRC32C, so a restore never
// runs on silently damaged state.
//
// A walkthrough of one job's life:
//
//	s, err := storage.Open(dir, jobID)     // creates and probes <dir>/<jobID>
//	err = s.CleanIncomplete()              // start-up: drop crash leftovers
//	md, skipped, err := s.LoadLatest(ctx)  // restore; skipped names bad checkpoints
//
//	// per checkpoint n, tasks in parallel:
//	f, err := s.WriteFile(ctx, n, "3-1-keyed", func(w io.Writer) error { ... })
//	// the coordinator, once every task acknowledged:
//	_, err = s.WriteMetadata(ctx, md)      // checkpoint n now exists
//	removed, err := s.Retain(3)            // keep the newest three
//	// or, if it was aborted:
//	err = s.Discard(n)
//
// For restoring from an explicit path (--from PATH), LoadPath verifies one
// checkpoint and hands back a read-only FS rooted at its job directory.
// ReadFile reads a (keyed) state file whole; OpenFile streams one that may
// be larger than memory (channel state), checking size and checksum when
// it ends.
//
// The _metadata format is a fixed header (magic "WEIRCHK\x00", uint16
// version, uint32 payload length, big endian), a JSON payload — so that the
// file stays inspectable with standard tools — and a CRC32C of everything
// before it. Decode rejects any deviation with a message that says which.
// Version 2 adds channel state (the in-flight records of an unaligned
// checkpoint) and incremental keyed state. Version 3 adds a state table per
// operator (checkpoint.OperatorState.States): one row per registered state
// with its scope, kind, key-hash class, encoded codec schemas and their
// fingerprint. Decode checks that rows are unique per operator and scope,
// that each schema decodes with codec.DecodeSchema, and that every state
// the operator's subtasks hold has a row (statetable.go). Encode writes the
// oldest version that holds the metadata (3 only with a table, 2 only with
// channel or incremental state, else 1), so that older builds keep reading
// what they can. Nothing fills the tables yet: the runtime wiring is a
// later step of docs/design/state-evolution.md.
//
// A channel-state file ("WEIRCHS\x00", a version byte, then frames of
// uvarint(channel) uvarint(len) payload; channelfile.go) holds one
// subtask's recorded input batches. ChannelFrameReader reads it in file
// order and checks it against its handle's segments.
//
// All IO goes through a vfs.FS, so tests inject disk-full, failed syncs and
// failed renames with vfs.WithErrors.
//
// Owns: the on-disk layout of checkpoints and savepoints, metadata
// encoding, durability and the choice of the newest usable checkpoint. Must
// not touch: the runtime, tasks or the coordinator; it is called by them
// and knows nothing of jobs beyond their folder (checked by
// internal/archtest).
package storage
