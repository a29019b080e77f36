package storage

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"

	"github.com/weirstream/weir/internal/checkpoint"
)

const (
	// magic opens every _metadata file; the NUL keeps it from looking like
	// text to tools that sniff.
	magic = "WEIRCHK\x00"
	// formatVersion is the only version this build writes and reads.
	formatVersion uint16 = 1
	headerLen            = len(magic) + 2 + 4
	trailerLen           = 4
)

// castagnoli is the CRC32C table, shared read-only by everything here.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encode serializes checkpoint metadata into the _metadata format: header,
// indented JSON payload, CRC32C trailer.
func Encode(md *checkpoint.Metadata) ([]byte, error) {
	if md == nil {
		return nil, errors.New("encode checkpoint metadata: metadata is nil")
	}
	payload, err := json.MarshalIndent(md, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode checkpoint %d metadata: %w", md.ID, err)
	}
	if len(payload) > math.MaxUint32 {
		return nil, fmt.Errorf("encode checkpoint %d metadata: payload is %d bytes, over the 4 GiB limit; keep large operator state in state files", md.ID, len(payload))
	}
	b := make([]byte, 0, headerLen+len(payload)+trailerLen)
	b = append(b, magic...)
	b = binary.BigEndian.AppendUint16(b, formatVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	b = append(b, payload...)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	return b, nil
}

// Decode parses a _metadata file. Every error wraps ErrCorrupt, except the
// one for a version newer than this build, which also says to upgrade.
func Decode(b []byte) (*checkpoint.Metadata, error) {
	if len(b) < headerLen {
		if !bytes.HasPrefix([]byte(magic), b[:min(len(b), len(magic))]) {
			return nil, fmt.Errorf("%w: not a weir checkpoint metadata file: bad magic %q", ErrCorrupt, b[:min(len(b), len(magic))])
		}
		return nil, fmt.Errorf("%w: metadata truncated: %d bytes, shorter than the %d-byte header", ErrCorrupt, len(b), headerLen)
	}
	if string(b[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: not a weir checkpoint metadata file: bad magic %q, want %q", ErrCorrupt, b[:len(magic)], magic)
	}
	version := binary.BigEndian.Uint16(b[len(magic):])
	switch {
	case version > formatVersion:
		return nil, fmt.Errorf("%w: metadata format version %d was written by a newer weir (this build reads version %d); restore with a newer weir", ErrCorrupt, version, formatVersion)
	case version != formatVersion:
		return nil, fmt.Errorf("%w: unknown metadata format version %d (this build reads version %d)", ErrCorrupt, version, formatVersion)
	}
	n := int64(binary.BigEndian.Uint32(b[len(magic)+2:]))
	want := int64(headerLen) + n + trailerLen
	if got := int64(len(b)); got < want {
		return nil, fmt.Errorf("%w: metadata truncated: %d bytes, header says %d", ErrCorrupt, got, want)
	} else if got > want {
		return nil, fmt.Errorf("%w: metadata has %d trailing bytes after the checksum", ErrCorrupt, got-want)
	}
	body := b[:want-trailerLen]
	stored := binary.BigEndian.Uint32(b[want-trailerLen:])
	if sum := crc32.Checksum(body, castagnoli); sum != stored {
		return nil, fmt.Errorf("%w: metadata checksum mismatch: stored 0x%08x, computed 0x%08x", ErrCorrupt, stored, sum)
	}
	md, err := decodePayload(body[headerLen:])
	if err != nil {
		return nil, fmt.Errorf("%w: metadata payload: %w", ErrCorrupt, err)
	}
	return md, nil
}

// decodePayload parses the JSON strictly: an unknown field means a writer
// this build does not understand, and ignoring it could drop state.
func decodePayload(p []byte) (*checkpoint.Metadata, error) {
	dec := json.NewDecoder(bytes.NewReader(p))
	dec.DisallowUnknownFields()
	var md checkpoint.Metadata
	if err := dec.Decode(&md); err != nil {
		return nil, fmt.Errorf("bad JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("bad JSON: data after the metadata object")
	}
	if err := validate(&md); err != nil {
		return nil, err
	}
	return &md, nil
}

// validate checks what JSON cannot: values that would make a restore misread
// state rather than fail.
func validate(md *checkpoint.Metadata) error {
	if md.ID < 0 {
		return fmt.Errorf("negative checkpoint id %d", md.ID)
	}
	if md.Kind != checkpoint.Periodic && md.Kind != checkpoint.Final && md.Kind != checkpoint.Savepoint {
		return fmt.Errorf("unknown checkpoint kind %d", md.Kind)
	}
	for _, op := range md.Operators {
		for _, st := range op.Subtasks {
			k := st.State.Keyed
			if k == nil {
				continue
			}
			if k.File.Size < 0 {
				return fmt.Errorf("operator %q subtask %d: state file %s has negative size %d", op.UID, st.Subtask, k.File.Path, k.File.Size)
			}
			for _, kg := range k.KeyGroups {
				if kg.Offset < 0 || kg.Length < 0 || kg.Offset > k.File.Size-kg.Length {
					return fmt.Errorf("operator %q subtask %d: key group %d at [%d,+%d) lies outside state file %s of %d bytes", op.UID, st.Subtask, kg.KeyGroup, kg.Offset, kg.Length, k.File.Path, k.File.Size)
				}
			}
		}
	}
	return nil
}
