package runtime

import "errors"

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
