package faults

import (
	"errors"
	"fmt"
)

// ErrInjected is matched (errors.Is) by every injected failure, so the
// runtime and tests can tell planned failures from real ones.
var ErrInjected = errors.New("injected failure")

// InjectedError is the error Hit returns when a planned failure fires.
type InjectedError struct {
	// Point is where the failure fired.
	Point Point
	// N numbers the failure within its plan, from 1, in threshold order.
	N int
}

// Error says which planned failure fired where.
func (e *InjectedError) Error() string {
	return fmt.Sprintf("injected failure %d at %s", e.N, e.Point)
}

// Is makes errors.Is(err, ErrInjected) hold.
func (e *InjectedError) Is(target error) bool { return target == ErrInjected }
