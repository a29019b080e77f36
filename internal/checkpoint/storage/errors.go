package storage

import "errors"

// ErrCorrupt marks checkpoint data that is damaged or missing: bad bytes in a
// _metadata file, a state file whose size or checksum does not match what the
// metadata says, or a referenced file that does not exist. Test with
// errors.Is; the wrapping error names the path and the defect.
var ErrCorrupt = errors.New("checkpoint data corrupt")

// ErrNoCheckpoint means the job has no completed checkpoint at all (no chk
// directory with a _metadata file), which on start-up means a fresh start.
var ErrNoCheckpoint = errors.New("no completed checkpoint")
