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
// The report has sections for channel state (in-flight records of unaligned
// checkpoints) and shared files (state files referenced by several
// checkpoints, as incremental checkpoints would have). weir takes aligned,
// full checkpoints, so both are empty; the types exist so that the report
// and its JSON keep their shape when those features arrive.
package inspect
