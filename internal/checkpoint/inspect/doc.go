// Package inspect builds a human- and machine-readable report of one
// completed checkpoint, for `weir checkpoints inspect PATH`. It is pure
// logic over checkpoint storage: it verifies the checkpoint (metadata and
// every state file's size and CRC32C, through storage.LoadPath), then walks
// the keyed state files block by block and the inline operator list state,
// and counts what it finds. It knows the on-disk formats, not the Go types
// of the states, so it can report on any job's checkpoint.
//
// A walkthrough:
//
//	r, err := inspect.Inspect(ctx, "state/demo/chk-7") // or .../chk-7/_metadata
//	switch {
//	case errors.Is(err, inspect.ErrNotCheckpoint): // the path is no checkpoint: usage error
//	case errors.Is(err, storage.ErrCorrupt):       // damaged; err names the file
//	}
//	for _, op := range r.Operators { ... }          // per operator, per subtask
//	fmt.Println(r.Totals.KeyedStates)               // entries per (operator, state)
//
// Section kinds are internal/state's state.Kind: a state registered with
// a time to live (the state.KindTTL flag) is reported with TTL set, and the
// two timer sets are counted apart, Timers (processing time) and
// EventTimers (event time: windows, RegisterEventTimeTimer).
//
// Channel state (the in-flight records of an unaligned checkpoint) is
// reported per subtask: the file, and per input channel its producer, the
// file's segments and batches, records and bytes. Its file is streamed and
// checked against the handle's segments like a restore would replay it;
// the batches themselves are not decoded, their codec being the job's.
//
// An incremental checkpoint of the lsm backend gives each keyed subtask an
// LSM store: the report lists its catalogue of states, its private files
// (in chk-<n>/), its timers and its sizes (full, and uploaded by this
// checkpoint), and in a section of its own every shared file (in the job's
// shared/ area) with the operator subtasks whose stores reference it.
// Every file's size and CRC32C is verified, shared ones included; a
// missing or damaged shared file fails the inspection, naming it. The
// SSTs are not opened: entry counts would take Pebble and the store.
//
// Owns: the report of `weir checkpoints inspect`. Must not touch:
// checkpoints themselves (it only reads them); it may read runtime's
// state-file formats, which is why it is the one package under
// internal/checkpoint allowed above the runtime.
package inspect
