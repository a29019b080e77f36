package jobmaster

import (
	"errors"
	"fmt"
)

// JobFailedError is the outcome of a job that failed for good: its restart
// strategy declined another attempt, or a restart could not cure the
// failure.
type JobFailedError struct {
	Cause    error
	Restarts int
	Reason   string
}

func (e *JobFailedError) Error() string {
	return fmt.Sprintf("job failed after %d restarts (%s); root cause: %v", e.Restarts, e.Reason, e.Cause)
}

func (e *JobFailedError) Unwrap() error { return e.Cause }

// unrecoverable marks a failure that no restart can cure, such as a
// restore that would duplicate output a sink already committed. The job
// fails at once instead of spending its restart attempts on it.
type unrecoverable struct{ err error }

func (u *unrecoverable) Error() string { return u.err.Error() }
func (u *unrecoverable) Unwrap() error { return u.err }

// Unrecoverable wraps err so that the job fails without restarting.
func Unrecoverable(err error) error {
	if err == nil {
		return nil
	}
	return &unrecoverable{err}
}

// IsUnrecoverable reports whether err, or an error it wraps, was marked
// with Unrecoverable.
func IsUnrecoverable(err error) bool {
	var u *unrecoverable
	return errors.As(err, &u)
}

// errSubsumed marks a checkpoint aborted because a newer one completed.
var errSubsumed = errors.New("subsumed")

// errEnding answers a request that comes while the job ends.
var errEnding = errors.New("the job is ending")
