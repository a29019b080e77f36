package runtime

import "github.com/weirstream/weir/internal/jobmaster"

// Unrecoverable wraps err so that the job fails without restarting: a
// failure that no restart can cure, such as a restore that would duplicate
// output a sink already committed. The marker lives in internal/jobmaster,
// whose Machine reads it.
func Unrecoverable(err error) error { return jobmaster.Unrecoverable(err) }

// IsUnrecoverable reports whether err, or an error it wraps, was marked
// with Unrecoverable.
func IsUnrecoverable(err error) bool { return jobmaster.IsUnrecoverable(err) }
