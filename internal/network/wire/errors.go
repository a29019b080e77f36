package wire

import (
	"errors"
	"fmt"
)

// ErrMalformed marks bytes that are not a valid version-1 frame. Every
// decoding error of this package except a version mismatch wraps it; the
// connection that read such bytes must send Error on channel 0 and close.
var ErrMalformed = errors.New("malformed frame")

// Defect names what is wrong with a malformed frame.
type Defect uint8

const (
	// DefectLength: the length field is outside [MinLength, MaxLength].
	DefectLength Defect = iota + 1
	// DefectKind: the kind byte names no frame kind of version 1.
	DefectKind
	// DefectFlags: the flags byte has a bit not defined for the kind (only
	// Data and Event may have FlagLogPos; the rest is reserved).
	DefectFlags
	// DefectChannel: the channel id is not allowed for the kind (Hello on a
	// data channel, Data on channel 0).
	DefectChannel
	// DefectSeq: a sequence number on a kind that carries none.
	DefectSeq
	// DefectTruncated: the bytes end inside a header, field or payload.
	DefectTruncated
	// DefectTrailing: bytes follow the last field of a payload.
	DefectTrailing
	// DefectValue: a field holds a value its type forbids (bad magic, zero
	// credit, unknown event, an overlong varint, a number out of range).
	DefectValue
)

// String names the defect as it appears in error messages.
func (d Defect) String() string {
	switch d {
	case DefectLength:
		return "length out of range"
	case DefectKind:
		return "unknown kind"
	case DefectFlags:
		return "nonzero flags"
	case DefectChannel:
		return "channel not allowed for kind"
	case DefectSeq:
		return "sequence number not allowed for kind"
	case DefectTruncated:
		return "truncated"
	case DefectTrailing:
		return "trailing bytes"
	case DefectValue:
		return "bad value"
	}
	return fmt.Sprintf("defect(%d)", uint8(d))
}

// MalformedError describes one defect of a frame or payload. Callers test
// for it with errors.Is(err, ErrMalformed) or errors.As to read the defect.
type MalformedError struct {
	Defect Defect
	// Kind is the frame kind when it was known (0 while reading the length).
	Kind Kind
	// Detail names the field and the offending value.
	Detail string
}

// Error renders "malformed data frame: trailing bytes: 3 bytes after the
// records".
func (e *MalformedError) Error() string {
	what := "malformed frame"
	if e.Kind.Valid() {
		what = "malformed " + e.Kind.String() + " frame"
	}
	if e.Detail == "" {
		return what + ": " + e.Defect.String()
	}
	return what + ": " + e.Defect.String() + ": " + e.Detail
}

// Is makes errors.Is(err, ErrMalformed) true.
func (e *MalformedError) Is(target error) bool { return target == ErrMalformed }

func malformed(k Kind, d Defect, format string, args ...any) error {
	return &MalformedError{Defect: d, Kind: k, Detail: fmt.Sprintf(format, args...)}
}

// ErrVersion marks a Hello from a peer that speaks another protocol
// version. It is not a malformed frame: the connection answers with an
// Error naming both versions before it closes.
var ErrVersion = errors.New("network protocol version mismatch")

// VersionError is the error DecodeHello returns for another version.
type VersionError struct {
	Peer, Local uint16
}

// Error names both versions and the fix.
func (e *VersionError) Error() string {
	return fmt.Sprintf("peer speaks weir network protocol %d, this process %d: run the same weir build in every role", e.Peer, e.Local)
}

// Is makes errors.Is(err, ErrVersion) true.
func (e *VersionError) Is(target error) bool { return target == ErrVersion }
