package app

import (
	"errors"
	"fmt"
)

// UsageError marks an error in flags, configuration, environment or
// paths: the program exits with code 2. Job code returns one (Usagef)
// for bad flag values found in Run.Configure or Run.Build.
type UsageError struct{ Err error }

// Error returns the wrapped error's message.
func (u UsageError) Error() string { return u.Err.Error() }

// Unwrap returns Err, so that errors.Is and errors.As look into it.
func (u UsageError) Unwrap() error { return u.Err }

// Usagef returns a UsageError with a formatted message.
func Usagef(format string, a ...any) error { return UsageError{fmt.Errorf(format, a...)} }

// ExitCode maps the error of a command to the process exit code: 0 for
// nil, 2 for a UsageError, 1 for anything else.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var u UsageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}
