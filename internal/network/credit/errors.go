package credit

import (
	"errors"
	"fmt"
)

// The two kinds of error the ledgers return call for different reactions
// (docs/design/cluster.md, section 3), so callers tell them apart with
// errors.Is.
var (
	// ErrOutOfSequence marks a frame whose sequence number is not the next
	// one: frames of the channel were lost or reordered. It fails that
	// channel's consumer; the connection and its other channels go on.
	ErrOutOfSequence = errors.New("frames lost or reordered")
	// ErrViolation marks a frame that breaks the credit protocol: Data
	// without credit, a negative backlog, an AddCredit of nothing or of
	// credits never granted. The peer is broken, as after a malformed
	// frame: the reader sends Error on channel 0 and closes the connection.
	ErrViolation = errors.New("credit protocol violation")
)

// violationError keeps the ledger's message as it is and answers
// errors.Is(err, ErrViolation).
type violationError struct{ msg string }

func (e *violationError) Error() string        { return e.msg }
func (e *violationError) Is(target error) bool { return target == ErrViolation }

func violation(format string, args ...any) error {
	return &violationError{msg: fmt.Sprintf(format, args...)}
}
