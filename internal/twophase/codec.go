package twophase

import (
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/weirstream/weir/internal/checkpoint"
)

// ErrCorrupt marks state bytes that cannot be decoded: truncated, trailing
// garbage, an unknown version or out-of-order checkpoint ids. Test for it
// with errors.Is; the usual fix is to restore from an older checkpoint.
var ErrCorrupt = errors.New("corrupt two-phase-commit state")

// stateVersion is the first byte of an encoded State. Bump it when the layout
// changes and keep decoding the old one.
const stateVersion = 1

// Codec turns a transaction handle into bytes and back. Decode must not
// panic on arbitrary input; b is a sub-slice of the bytes given to
// DecodeState, so copy it if the handle keeps it.
type Codec[TXN any] interface {
	Encode(txn TXN) ([]byte, error)
	Decode(b []byte) (TXN, error)
}

// MarshalerCodec is a Codec for handle types whose pointer implements
// encoding.BinaryMarshaler and encoding.BinaryUnmarshaler, such as
// connectors/file.Txn: MarshalerCodec[file.Txn, *file.Txn]{}.
type MarshalerCodec[T any, PT interface {
	*T
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}] struct{}

// Encode calls txn's MarshalBinary.
func (MarshalerCodec[T, PT]) Encode(txn T) ([]byte, error) {
	return PT(&txn).MarshalBinary()
}

// Decode calls UnmarshalBinary on a zero T.
func (MarshalerCodec[T, PT]) Decode(b []byte) (T, error) {
	var txn T
	err := PT(&txn).UnmarshalBinary(b)
	return txn, err
}

// EncodeState serializes s: a version byte, the number of pending
// transactions, each as a varint checkpoint id and a length-prefixed handle,
// then a flag and the length-prefixed open handle if there is one. Pending
// ids must increase, as Tracker.State returns them.
func EncodeState[TXN any](s State[TXN], c Codec[TXN]) ([]byte, error) {
	b := []byte{stateVersion}
	b = binary.AppendUvarint(b, uint64(len(s.Pending)))
	for i, p := range s.Pending {
		if i > 0 && p.ID <= s.Pending[i-1].ID {
			return nil, fmt.Errorf("encode two-phase-commit state: pending checkpoint ids out of order (%d after %d)", p.ID, s.Pending[i-1].ID)
		}
		tb, err := c.Encode(p.Txn)
		if err != nil {
			return nil, fmt.Errorf("encode two-phase-commit state: pending transaction of checkpoint %d: %w", p.ID, err)
		}
		b = binary.AppendVarint(b, int64(p.ID))
		b = binary.AppendUvarint(b, uint64(len(tb)))
		b = append(b, tb...)
	}
	if !s.HasCurrent {
		return append(b, 0), nil
	}
	tb, err := c.Encode(s.Current)
	if err != nil {
		return nil, fmt.Errorf("encode two-phase-commit state: open transaction: %w", err)
	}
	b = append(b, 1)
	b = binary.AppendUvarint(b, uint64(len(tb)))
	return append(b, tb...), nil
}

// DecodeState parses bytes written by EncodeState. Malformed input yields an
// error wrapping ErrCorrupt (or the codec's own error); it never panics.
func DecodeState[TXN any](b []byte, c Codec[TXN]) (State[TXN], error) {
	var s State[TXN]
	d := decoder{b: b}
	if v := d.byte(); d.err == nil && v != stateVersion {
		return s, fmt.Errorf("decode two-phase-commit state: version %d, want %d: %w", v, stateVersion, ErrCorrupt)
	}
	n := d.uvarint()
	// Each pending entry takes at least two bytes; a larger count is garbage
	// and must not drive a huge allocation.
	if d.err == nil && n > uint64(len(d.b))/2 {
		return s, fmt.Errorf("decode two-phase-commit state: %d pending transactions in %d bytes: %w", n, len(d.b), ErrCorrupt)
	}
	if n > 0 {
		s.Pending = make([]Pending[TXN], 0, n)
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		id := d.varint()
		tb := d.bytes()
		if d.err != nil {
			break
		}
		if i > 0 && id <= int64(s.Pending[i-1].ID) {
			return State[TXN]{}, fmt.Errorf("decode two-phase-commit state: pending checkpoint ids out of order (%d after %d): %w", id, s.Pending[i-1].ID, ErrCorrupt)
		}
		txn, err := c.Decode(tb)
		if err != nil {
			return State[TXN]{}, fmt.Errorf("decode two-phase-commit state: pending transaction of checkpoint %d: %w", id, err)
		}
		s.Pending = append(s.Pending, Pending[TXN]{ID: checkpoint.ID(id), Txn: txn})
	}
	switch flag := d.byte(); {
	case d.err != nil:
	case flag == 1:
		tb := d.bytes()
		if d.err != nil {
			break
		}
		txn, err := c.Decode(tb)
		if err != nil {
			return State[TXN]{}, fmt.Errorf("decode two-phase-commit state: open transaction: %w", err)
		}
		s.Current, s.HasCurrent = txn, true
	case flag != 0:
		d.err = fmt.Errorf("open-transaction flag %d", flag)
	}
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return State[TXN]{}, fmt.Errorf("decode two-phase-commit state: %w: %w", d.err, ErrCorrupt)
	}
	return s, nil
}
