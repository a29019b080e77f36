package file

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Txn is the handle of one sink transaction: Name is the visible part file
// it commits to, Seq its sequence number within the subtask. It is what the
// two-phase-commit operator stores in checkpoints.
type Txn struct {
	Name string
	Seq  uint64
}

// txnVersion is the first byte of an encoded Txn.
const txnVersion = 1

// ErrCorruptTxn marks bytes that do not decode to a Txn.
var ErrCorruptTxn = errors.New("corrupt file sink transaction handle")

// MarshalBinary encodes the handle as a version byte, Seq as a uvarint and
// the name.
func (t Txn) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(t.Name))
	b = append(b, txnVersion)
	b = binary.AppendUvarint(b, t.Seq)
	return append(b, t.Name...), nil
}

// UnmarshalBinary decodes bytes written by MarshalBinary. It checks the
// format, not the name; Commit and Abort check that.
func (t *Txn) UnmarshalBinary(b []byte) error {
	if len(b) == 0 || b[0] != txnVersion {
		return fmt.Errorf("decode file sink transaction: missing or unknown version: %w", ErrCorruptTxn)
	}
	seq, n := binary.Uvarint(b[1:])
	if n <= 0 {
		return fmt.Errorf("decode file sink transaction: bad sequence number: %w", ErrCorruptTxn)
	}
	t.Seq, t.Name = seq, string(b[1+n:])
	return nil
}
