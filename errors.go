package weir

import (
	"errors"
	"fmt"
	"github.com/weirstream/weir/internal/codec"

	"github.com/weirstream/weir/internal/runtime"
)

// JobFailedError is what Execute and Job.Wait return when a job fails for
// good: its restart strategy declined another attempt, or the failure was
// marked Unrecoverable. Match it with errors.As.
type JobFailedError struct {
	// Cause is the root cause: the failure of the last attempt. It
	// matches ErrUserPanic (errors.Is) when user code panicked.
	Cause error
	// Restarts is the number of restarts the job went through before it
	// gave up.
	Restarts int
	// Reason says why no restart followed (the strategy's verdict, or that
	// the failure was unrecoverable).
	Reason string
}

// Error describes the failure with its root cause.
func (e *JobFailedError) Error() string {
	return fmt.Sprintf("job failed after %d restarts (%s); root cause: %v", e.Restarts, e.Reason, e.Cause)
}

// Unwrap returns Cause, so that errors.Is and errors.As look into it.
func (e *JobFailedError) Unwrap() error { return e.Cause }

// ErrUserPanic is matched (errors.Is) by the failure of a task whose user
// code panicked; the error's text carries the panic value and the stack.
var ErrUserPanic = errors.New("panic in user code")

// ErrJobFinished is matched (errors.Is) by the error of Execute or Start
// for a run from scratch of a job whose checkpoint folder records a run
// of it that FINISHED: the run would write its whole output again. The
// error names that run; WithRerunFinished, WithRestoreFrom, another checkpoint
// folder or another job name are the ways forward (docs/guarantees.md,
// "Running a job again").
var ErrJobFinished = runtime.ErrFinishedRun

// ErrIncompatibleState is matched (errors.Is) by the failure of a job
// restored from a checkpoint or savepoint whose state the program's types
// cannot read: a field whose kind changed, a narrowed number, a key type
// that hashes differently. Such a job fails at once, without a restart;
// the error names the operator, the state, the field and both types.
// docs/compatibility.md lists what evolves freely and what does not.
var ErrIncompatibleState = codec.ErrIncompatible

// publicError converts the runtime's errors at the API boundary: its
// JobFailedError into the public one, its panic marker into one matching
// ErrUserPanic. Other errors pass unchanged.
func publicError(err error) error {
	var jf *runtime.JobFailedError
	if errors.As(err, &jf) {
		return &JobFailedError{Cause: publicCause(jf.Cause), Restarts: jf.Restarts, Reason: jf.Reason}
	}
	return publicCause(err)
}

func publicCause(err error) error {
	if err != nil && errors.Is(err, runtime.ErrUserPanic) {
		return userPanic{err}
	}
	return err
}

// userPanic keeps the runtime's message and chain and adds ErrUserPanic.
type userPanic struct{ error }

func (e userPanic) Unwrap() error { return e.error }

func (userPanic) Is(target error) bool { return target == ErrUserPanic }
