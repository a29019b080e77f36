package wire

import "encoding/binary"

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
