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
// Channel state (the in-flight records of an unaligned checkpoint) is
// reported per subtask: the file, and per input channel its producer, the
// file's segments and batches, records and bytes. Its file is streamed and
// checked against the handle's segments like a restore would replay it;
// the batches themselves are not decoded, their codec being the job's.
//
// The shared-files section (state files referenced by several checkpoints,
// as incremental checkpoints would have) is empty: weir writes full
// checkpoints; the type exists so that the report and its JSON keep their
// shape when that feature arrives.
package inspect
