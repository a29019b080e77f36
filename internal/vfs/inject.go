package vfs

import (
	"errors"
	"fmt"
	"strings"
	"sync"
)

// ErrInjected is a generic injected failure, for tests that do not care
// which errno a real disk would have returned.
var ErrInjected = errors.New("injected error")

// Injector decides whether an operation fails. It must be safe for
// concurrent use: storage writes files from many goroutines.
type Injector interface {
	// MaybeError returns the error the operation on path should fail with,
	// or nil to let it proceed.
	MaybeError(op Op, path string) error
}

// InjectorFunc adapts a function to Injector.
type InjectorFunc func(op Op, path string) error

// MaybeError implements Injector.
func (f InjectorFunc) MaybeError(op Op, path string) error { return f(op, path) }

// Injectors consults each injector in order and returns the first error; all
// injectors before the failing one see the operation (so a Recorder placed
// first logs every attempt).
type Injectors []Injector

// MaybeError implements Injector.
func (is Injectors) MaybeError(op Op, path string) error {
	for _, in := range is {
		if err := in.MaybeError(op, path); err != nil {
			return err
		}
	}
	return nil
}

// OnOp fails every op on a path ending in suffix with err ("" matches every
// path).
func OnOp(op Op, suffix string, err error) Injector {
	return InjectorFunc(func(o Op, path string) error {
		if o == op && strings.HasSuffix(path, suffix) {
			return err
		}
		return nil
	})
}

// Recorder logs every operation it sees as "op path" and injects nothing.
type Recorder struct {
	mu  sync.Mutex
	ops []string
}

// MaybeError implements Injector.
func (r *Recorder) MaybeError(op Op, path string) error {
	r.mu.Lock()
	r.ops = append(r.ops, fmt.Sprintf("%s %s", op, path))
	r.mu.Unlock()
	return nil
}

// Ops returns the operations recorded so far, oldest first, with prefix
// trimmed from their paths (tests pass their temporary directory).
func (r *Recorder) Ops(prefix string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.ops))
	for i, s := range r.ops {
		out[i] = strings.Replace(s, prefix, "", 1)
	}
	return out
}

// Reset forgets the recorded operations.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.ops = nil
	r.mu.Unlock()
}
