package weir

import "github.com/weirstream/weir/internal/runtime"

// JobFailedError is what Execute returns when a job fails for good: its
// restart strategy declined another attempt, or the failure was marked
// Unrecoverable. Cause is the root cause.
type JobFailedError = runtime.JobFailedError

// ErrUserPanic is wrapped by the failure of a task whose user code
// panicked; the error carries the panic value and the stack.
var ErrUserPanic = runtime.ErrUserPanic
