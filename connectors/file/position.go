package file

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Position is where a LineReader resumes: byte Offset within files[File].
// A LineReader only hands out positions at line starts. File == len(files)
// with Offset 0 is the end of the input.
type Position struct {
	File   int
	Offset int64
}

// ErrCorruptPosition marks bytes that do not decode to a Position.
var ErrCorruptPosition = errors.New("corrupt file source position")

// positionVersion is the first byte of an encoded Position.
const positionVersion = 1

// MarshalBinary encodes the position for a source's checkpoint state: a
// version byte and two uvarints.
func (p Position) MarshalBinary() ([]byte, error) {
	if p.File < 0 || p.Offset < 0 {
		return nil, fmt.Errorf("encode file source position %+v: negative field", p)
	}
	b := []byte{positionVersion}
	b = binary.AppendUvarint(b, uint64(p.File))
	return binary.AppendUvarint(b, uint64(p.Offset)), nil
}

// UnmarshalBinary decodes bytes written by MarshalBinary; malformed input
// yields an error wrapping ErrCorruptPosition.
func (p *Position) UnmarshalBinary(b []byte) error {
	if len(b) == 0 || b[0] != positionVersion {
		return fmt.Errorf("decode file source position: missing or unknown version: %w", ErrCorruptPosition)
	}
	b = b[1:]
	f, n := binary.Uvarint(b)
	if n <= 0 || f > 1<<31 {
		return fmt.Errorf("decode file source position: bad file index: %w", ErrCorruptPosition)
	}
	b = b[n:]
	off, n := binary.Uvarint(b)
	if n <= 0 || off > 1<<62 || n != len(b) {
		return fmt.Errorf("decode file source position: bad offset or trailing bytes: %w", ErrCorruptPosition)
	}
	*p = Position{File: int(f), Offset: int64(off)}
	return nil
}
