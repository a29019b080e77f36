// Package weak holds the pure cores of WEAKLY_CONSISTENT mode
// (docs/weak-consistency.md): the bookkeeping of a producer's in-flight
// log per output channel (log.go), which lets a restarted consumer be
// replayed what it lost and drops what a restarted producer emits again;
// the decisions on each buffer a producer sends through that channel
// (output.go: wait, discard, skip, hold for a replay or send); and the
// JobMaster's per-task snapshot schedule (snapshots.go).
//
// Nothing here does IO, starts a goroutine or reads a clock: the runtime
// (internal/runtime/weakrt) holds the payloads and performs what these
// cores decide, and the tests drive them with datadriven scripts and
// seeded random interleavings against naive models that track every
// record.
//
// The in-flight log and the snapshot schedule are described below and in
// their files.
//
// Owns: the rules of the mode. Must not touch: gates, channels, storage,
// goroutines or the clock; internal/archtest keeps it pure.
package weak
