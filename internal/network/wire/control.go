package wire

import (
	"encoding/binary"

	"github.com/weirstream/weir/internal/checkpoint"
)

// AppendAddCredit appends an AddCredit frame returning n > 0 credits on
// channel. It panics on n out of range: a zero grant is never sent.
func AppendAddCredit(dst []byte, channel uint32, n int) []byte {
	if n < 1 || n > maxCount {
		panic("wire: AddCredit of a credit out of range")
	}
	dst = AppendHeader(dst, Header{Kind: AddCredit, Channel: channel}, uvarintLen(uint64(n)))
	return binary.AppendUvarint(dst, uint64(n))
}

// DecodeAddCredit decodes an AddCredit payload: a credit of at least 1.
func DecodeAddCredit(b []byte) (int, error) {
	p := payload{kind: AddCredit, b: b}
	n := p.count("credit", 1)
	if err := p.end("credit"); err != nil {
		return 0, err
	}
	return n, nil
}

// AppendCancelPartition appends a CancelPartition frame on channel. It has
// no payload.
func AppendCancelPartition(dst []byte, channel uint32) []byte {
	return AppendHeader(dst, Header{Kind: CancelPartition, Channel: channel}, 0)
}

// DecodeCancelPartition checks that a CancelPartition payload is empty.
func DecodeCancelPartition(b []byte) error {
	p := payload{kind: CancelPartition, b: b}
	return p.end("header")
}

// AppendError appends an Error frame with msg; on channel 0 it announces
// that the sender closes the connection.
func AppendError(dst []byte, channel uint32, msg string) []byte {
	dst = AppendHeader(dst, Header{Kind: Error, Channel: channel}, len(msg))
	return append(dst, msg...)
}

// DecodeError returns an Error payload's message. Any bytes are a message;
// the receiver logs it quoted.
func DecodeError(b []byte) string { return string(b) }

// AppendPrioritize appends a Prioritize frame on channel asking the
// producer to let the barrier of checkpoint id overtake the data queued
// before it. It panics on an id below 1: checkpoint ids start at 1.
func AppendPrioritize(dst []byte, channel uint32, id checkpoint.ID) []byte {
	if id < 1 {
		panic("wire: Prioritize of a checkpoint id below 1")
	}
	dst = AppendHeader(dst, Header{Kind: Prioritize, Channel: channel}, 8)
	return binary.BigEndian.AppendUint64(dst, uint64(id))
}

// DecodePrioritize decodes a Prioritize payload: a checkpoint id of at
// least 1.
func DecodePrioritize(b []byte) (checkpoint.ID, error) {
	p := payload{kind: Prioritize, b: b}
	id := p.checkpointID("checkpoint id")
	if p.err == nil && id < 1 {
		p.fail(DefectValue, "checkpoint id 0, want at least 1")
	}
	if err := p.end("checkpoint id"); err != nil {
		return 0, err
	}
	return id, nil
}
