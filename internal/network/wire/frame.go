package wire

import (
	"encoding/binary"
	"strconv"
)

// Kind is the frame kind byte.
type Kind uint8

// The frame kinds of version 1. Zero is no kind, so zeroed memory never
// parses as a frame.
const (
	// Hello opens a connection, dialer to acceptor, on channel 0.
	Hello Kind = iota + 1
	// HelloOK accepts it, acceptor to dialer, on channel 0.
	HelloOK
	// PartitionRequest subscribes a consumer's input channel to a producer's
	// output; the header's channel id is the one the consumer chose.
	PartitionRequest
	// Data carries encoded records and takes one credit.
	Data
	// Event carries a barrier, cancel barrier, end of partition or end of
	// data, in order with Data and without credit.
	Event
	// AddCredit returns credits from consumer to producer.
	AddCredit
	// CancelPartition tells the producer its consumer is gone.
	CancelPartition
	// Error carries a message; on channel 0 it is fatal to the connection.
	Error
	// Prioritize asks the producer, consumer to producer, to send the
	// barrier of a checkpoint ahead of the data queued before it (the
	// consumer's alignment timed out): its queued barrier and later ones
	// of that checkpoint become priority events. Added with the runtime's
	// remote channels; peers of one build always share it.
	Prioritize
	// Release tells the producer, consumer to producer, that the
	// consumer's completed snapshot covers the producer's in-flight log up
	// to a LogPos (WEAKLY_CONSISTENT mode), so the log may drop it. Added
	// with weak mode's remote channels, like Prioritize without a version
	// bump: peers of one build always share it.
	Release
	maxKind = Release
)

// Valid reports whether k is a kind of version 1.
func (k Kind) Valid() bool { return k >= Hello && k <= maxKind }

// String names the kind as used in errors and logs.
func (k Kind) String() string {
	switch k {
	case Hello:
		return "hello"
	case HelloOK:
		return "hello-ok"
	case PartitionRequest:
		return "partition-request"
	case Data:
		return "data"
	case Event:
		return "event"
	case AddCredit:
		return "add-credit"
	case CancelPartition:
		return "cancel-partition"
	case Error:
		return "error"
	case Prioritize:
		return "prioritize"
	case Release:
		return "release"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// sequenced reports whether frames of kind k carry a sequence number: Data
// and Event count per channel from 0, every other kind has 0.
func (k Kind) sequenced() bool { return k == Data || k == Event }

// positioned reports whether frames of kind k may carry FlagLogPos: Data
// and Event, the buffers a weak producer's log holds.
func (k Kind) positioned() bool { return k == Data || k == Event }

// Layout constants of version 1.
const (
	// HeaderSize is the bytes before the payload: length, kind, flags,
	// channel, sequence.
	HeaderSize = 18
	// MinLength is the smallest length field: kind..seq with no payload.
	MinLength = HeaderSize - 4
	// MaxLength is the largest length field. A frame this big is a record
	// too large for a segment; normal Data frames are near the segment size.
	MaxLength = 64 << 20
	// MaxPayload is the largest payload a frame can carry.
	MaxPayload = MaxLength - MinLength
)

// Header is the fixed part of a frame after its length.
type Header struct {
	Kind Kind
	// Flags is FlagLogPos on a Data or Event frame whose payload starts
	// with a LogPos, else 0; the other bits are reserved (compression).
	Flags uint8
	// Channel is chosen by the receiving side of the data; 0 addresses the
	// connection itself.
	Channel uint32
	// Seq counts Data and Event frames per channel from 0.
	Seq uint64
}

// Frame is one decoded frame. Payload aliases the bytes it was decoded
// from (for a Reader: until the next call of Next).
type Frame struct {
	Header
	Payload []byte
}

// check validates a header against the rules of version 1 and returns the
// first defect.
func (h Header) check() error {
	if !h.Kind.Valid() {
		return malformed(0, DefectKind, "kind byte %d", uint8(h.Kind))
	}
	if h.Flags != 0 {
		if !h.Kind.positioned() {
			return malformed(h.Kind, DefectFlags, "flags %#02x on channel %d, want 0 in version 1", h.Flags, h.Channel)
		}
		if h.Flags != FlagLogPos {
			return malformed(h.Kind, DefectFlags, "flags %#02x on channel %d, want 0 or %#02x (log position) in version 1", h.Flags, h.Channel, FlagLogPos)
		}
	}
	switch h.Kind {
	case Hello, HelloOK:
		if h.Channel != 0 {
			return malformed(h.Kind, DefectChannel, "channel %d, want 0", h.Channel)
		}
	case Error:
	default:
		if h.Channel == 0 {
			return malformed(h.Kind, DefectChannel, "channel 0 is the connection's, want a channel id")
		}
	}
	if h.Seq != 0 && !h.Kind.sequenced() {
		return malformed(h.Kind, DefectSeq, "sequence %d on channel %d, want 0", h.Seq, h.Channel)
	}
	return nil
}

// checkLength validates the length field.
func checkLength(n uint32) error {
	if n < MinLength || n > MaxLength {
		return malformed(0, DefectLength, "length %d, want %d to %d", n, MinLength, MaxLength)
	}
	return nil
}

// parseHeader reads the header after the length from b[4:HeaderSize].
func parseHeader(b []byte) Header {
	return Header{
		Kind:    Kind(b[4]),
		Flags:   b[5],
		Channel: binary.BigEndian.Uint32(b[6:]),
		Seq:     binary.BigEndian.Uint64(b[10:]),
	}
}

// DecodeFrame decodes the frame at the start of b and returns it with the
// bytes it took. It checks the header, not the payload: decode that with
// the kind's function (DecodeData, DecodeEvent, …). Payload aliases b.
func DecodeFrame(b []byte) (Frame, int, error) {
	if len(b) < 4 {
		return Frame{}, 0, malformed(0, DefectTruncated, "%d bytes, a frame starts with a 4-byte length", len(b))
	}
	n := binary.BigEndian.Uint32(b)
	if err := checkLength(n); err != nil {
		return Frame{}, 0, err
	}
	if len(b) < HeaderSize {
		return Frame{}, 0, malformed(0, DefectTruncated, "%d bytes, the header has %d", len(b), HeaderSize)
	}
	h := parseHeader(b)
	if err := h.check(); err != nil {
		return Frame{}, 0, err
	}
	total := 4 + int(n)
	if len(b) < total {
		return Frame{}, 0, malformed(h.Kind, DefectTruncated, "%d of %d bytes on channel %d", len(b), total, h.Channel)
	}
	return Frame{Header: h, Payload: b[HeaderSize:total:total]}, total, nil
}

// AppendFrame appends a frame with the given header and payload. It panics
// on a header version 1 forbids or a payload above MaxPayload: frames are
// built by this process, so either is a programming error.
func AppendFrame(dst []byte, h Header, payload []byte) []byte {
	dst = AppendHeader(dst, h, len(payload))
	return append(dst, payload...)
}

// AppendHeader appends the header of a frame whose payload of n bytes the
// caller appends or writes next (a Data frame's records straight from their
// buffer). It panics like AppendFrame.
func AppendHeader(dst []byte, h Header, n int) []byte {
	if n < 0 || n > MaxPayload {
		panic("wire: payload of " + strconv.Itoa(n) + " bytes, at most " + strconv.Itoa(MaxPayload))
	}
	if err := h.check(); err != nil {
		panic("wire: " + err.Error())
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(MinLength+n))
	dst = append(dst, byte(h.Kind), h.Flags)
	dst = binary.BigEndian.AppendUint32(dst, h.Channel)
	return binary.BigEndian.AppendUint64(dst, h.Seq)
}

// beginFrame appends a header with a placeholder length; endFrame patches
// the length once the payload is appended after it. Together they build a
// frame without knowing the payload size in advance and without a copy.
func beginFrame(dst []byte, h Header) ([]byte, int) {
	return AppendHeader(dst, h, 0), len(dst)
}

func endFrame(dst []byte, start int) []byte {
	n := len(dst) - start - HeaderSize
	if n > MaxPayload {
		panic("wire: payload of " + strconv.Itoa(n) + " bytes, at most " + strconv.Itoa(MaxPayload))
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(MinLength+n))
	return dst
}
