// Package checkpoint holds the vocabulary shared by the checkpointing
// protocol: checkpoint ids and options, state handles that tasks acknowledge,
// and the metadata that a completed checkpoint persists.
//
// The protocol itself lives in sub-packages, each a pure state machine or an
// IO edge:
//
//   - coordinator: the JobManager side (trigger, collect acks, complete,
//     abort, subsume, tolerate failures); events in, actions out.
//   - barrier: the task side (align barriers across input channels).
//   - storage: the filesystem checkpoint storage (state files and the
//     atomically written, checksummed _metadata).
//
// The runtime drives these packages; they never start goroutines, read
// clocks or touch sockets themselves (storage is the one that does IO).
//
// Owns: the types every checkpointing package shares (ID, TaskID,
// TaskState, Metadata, Kind) and the file names of state in storage. Must
// not touch: IO, goroutines, clocks, or any package above it; it is
// imported by nearly every layer, so it stays plain data (checked by
// internal/archtest).
package checkpoint
