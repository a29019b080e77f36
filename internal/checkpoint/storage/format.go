package storage

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/weirstream/weir/internal/checkpoint"
)

const (
	// magic opens every _metadata file; the NUL keeps it from looking like
	// text to tools that sniff.
	magic = "WEIRCHK\x00"
	// formatVersion is the newest version this build writes and reads.
	// Version 4 adds the transaction blobs of two-phase-commit sinks
	// (OperatorSubtaskState.Blobs). Each version only adds
	// omitempty fields, and Encode writes the oldest version that holds
	// the metadata, so checkpoints that do not need a newer version stay
	// readable by older builds. Older builds decode strictly and refuse a
	// newer version with "restore with a newer weir"; a table smuggled into
	// an older version would give them a misleading "bad JSON" instead.
	formatVersion uint16 = 4
	// formatVersionTables is version 3: it adds the state tables. A file
	// with tables and without transaction blobs stays version 3.
	formatVersionTables uint16 = 3
	// formatVersionChannels is version 2: it adds channel state
	// (OperatorSubtaskState.Channels) and incremental keyed state
	// (OperatorSubtaskState.Incremental). Aligned, full checkpoints and
	// every savepoint without a state table are still version 1.
	formatVersionChannels uint16 = 2
	// formatVersionNoChannels is the version of metadata without channel
	// state, and the oldest version this build reads.
	formatVersionNoChannels uint16 = 1
	headerLen                      = len(magic) + 2 + 4
	trailerLen                     = 4
)

// castagnoli is the CRC32C table, shared read-only by everything here.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encode serializes checkpoint metadata into the _metadata format: header,
// indented JSON payload, CRC32C trailer. The version is the oldest that
// holds md: 4 if some subtask has transaction blobs, else 3 if some
// operator has a state table, else 2 if some subtask
// has channel state or incremental keyed state, else 1. A state table is
// validated here as Decode would, so that a writer's bug fails the
// checkpoint instead of leaving one that no restore can read.
func Encode(md *checkpoint.Metadata) ([]byte, error) {
	if md == nil {
		return nil, errors.New("encode checkpoint metadata: metadata is nil")
	}
	if err := validateTables(md); err != nil {
		return nil, fmt.Errorf("encode checkpoint %d metadata: %w", md.ID, err)
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
	version := formatVersionNoChannels
	switch {
	case hasBlobs(md):
		version = formatVersion
	case hasStateTable(md):
		version = formatVersionTables
	case hasChannelState(md) || hasIncremental(md):
		version = formatVersionChannels
	}
	b = binary.BigEndian.AppendUint16(b, version)
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
		return nil, fmt.Errorf("%w: metadata format version %d was written by a newer weir (this build reads versions %d to %d); restore with a newer weir", ErrCorrupt, version, formatVersionNoChannels, formatVersion)
	case version < formatVersionNoChannels:
		return nil, fmt.Errorf("%w: unknown metadata format version %d (this build reads versions %d to %d)", ErrCorrupt, version, formatVersionNoChannels, formatVersion)
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
	// A version-1 writer knew nothing of channel state, so a version-1
	// file holding some was not written by weir as it claims.
	if version == formatVersionNoChannels && hasChannelState(md) {
		return nil, fmt.Errorf("%w: metadata format version %d holds channel state, which only version %d can", ErrCorrupt, version, formatVersionChannels)
	}
	if version == formatVersionNoChannels && hasIncremental(md) {
		return nil, fmt.Errorf("%w: metadata format version %d holds incremental keyed state, which only version %d can", ErrCorrupt, version, formatVersionChannels)
	}
	// Likewise a state table in a file of an older version: the writers of
	// those versions had none.
	if version < formatVersionTables {
		for _, op := range md.Operators {
			if len(op.States) > 0 {
				r := op.States[0]
				return nil, fmt.Errorf("%w: metadata format version %d holds a state table (operator %q state %q, scope %s), which only version %d can", ErrCorrupt, version, op.UID, r.Name, r.Scope, formatVersionTables)
			}
		}
	}
	// And transaction blobs, which only version 4 has: a build reading
	// an older version would not count them as references.
	if version < formatVersion && hasBlobs(md) {
		return nil, fmt.Errorf("%w: metadata format version %d holds transaction blobs, which only version %d can", ErrCorrupt, version, formatVersion)
	}
	return md, nil
}

// hasBlobs reports whether any subtask of md has transaction blobs.
func hasBlobs(md *checkpoint.Metadata) bool {
	for _, op := range md.Operators {
		for _, st := range op.Subtasks {
			if len(st.State.Blobs) > 0 {
				return true
			}
		}
	}
	return false
}

// validateBlobs checks what JSON cannot about a subtask's transaction
// blobs: each is a blob (checkpoint.ParseBlobName) in the shared area or
// in the checkpoint's own folder (a savepoint's copy), named once.
func validateBlobs(id checkpoint.ID, blobs []checkpoint.StateFile) error {
	own := "chk-" + strconv.FormatInt(int64(id), 10)
	seen := map[string]bool{}
	for _, f := range blobs {
		dir, name := path.Split(f.Path)
		dir = strings.TrimSuffix(dir, "/")
		if _, ok := checkpoint.ParseBlobName(name); !ok || checkStateFileName(name) != nil {
			return fmt.Errorf("transaction blob %q: not a blob's name", f.Path)
		}
		if dir != checkpoint.SharedDir && dir != own {
			return fmt.Errorf("transaction blob %q: neither in %s/ nor in %s/", f.Path, checkpoint.SharedDir, own)
		}
		if seen[name] {
			return fmt.Errorf("transaction blob %s is listed twice", name)
		}
		seen[name] = true
		if f.Size < 0 {
			return fmt.Errorf("transaction blob %s has negative size %d", f.Path, f.Size)
		}
	}
	return nil
}

// hasStateTable reports whether any operator of md has a state table.
func hasStateTable(md *checkpoint.Metadata) bool {
	for _, op := range md.Operators {
		if len(op.States) > 0 {
			return true
		}
	}
	return false
}

// hasChannelState reports whether any subtask of md has channel state.
func hasChannelState(md *checkpoint.Metadata) bool {
	for _, op := range md.Operators {
		for _, st := range op.Subtasks {
			if st.State.Channels != nil {
				return true
			}
		}
	}
	return false
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
	if err := validateTables(&md); err != nil {
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
			if k := st.State.Keyed; k != nil {
				if k.File.Size < 0 {
					return fmt.Errorf("operator %q subtask %d: state file %s has negative size %d", op.UID, st.Subtask, k.File.Path, k.File.Size)
				}
				for _, kg := range k.KeyGroups {
					if kg.Offset < 0 || kg.Length < 0 || kg.Offset > k.File.Size-kg.Length {
						return fmt.Errorf("operator %q subtask %d: key group %d at [%d,+%d) lies outside state file %s of %d bytes", op.UID, st.Subtask, kg.KeyGroup, kg.Offset, kg.Length, k.File.Path, k.File.Size)
					}
				}
			}
			if h := st.State.Incremental; h != nil {
				if st.State.Keyed != nil {
					return fmt.Errorf("operator %q subtask %d: both a keyed state file and incremental keyed state", op.UID, st.Subtask)
				}
				if err := validateIncremental(h); err != nil {
					return fmt.Errorf("operator %q subtask %d: incremental keyed state: %w", op.UID, st.Subtask, err)
				}
			}
			if err := validateBlobs(md.ID, st.State.Blobs); err != nil {
				return fmt.Errorf("operator %q subtask %d: %w", op.UID, st.Subtask, err)
			}
			if c := st.State.Channels; c != nil {
				if err := validateChannels(c); err != nil {
					return fmt.Errorf("operator %q subtask %d: channel state file %s: %w", op.UID, st.Subtask, c.File.Path, err)
				}
			}
		}
	}
	return nil
}

// validateChannels checks a channel-state handle: every input channel is
// named once and sanely, and its segments lie inside the file after the
// header, in stream order, disjoint from each other and from every other
// channel's. Overlapping segments would make a restore replay bytes twice.
func validateChannels(c *checkpoint.ChannelStateHandle) error {
	size := c.File.Size
	if size < int64(ChannelStateHeaderLen) {
		return fmt.Errorf("size %d is smaller than the %d-byte header", size, ChannelStateHeaderLen)
	}
	type key struct{ input, producer int }
	seen := make(map[key]bool, len(c.Channels))
	var all []checkpoint.Segment
	for i, ch := range c.Channels {
		switch {
		case ch.Input < 0:
			return fmt.Errorf("input channel %d: negative input %d", i, ch.Input)
		case ch.ProducerUID == "":
			return fmt.Errorf("input channel %d: no producer uid", i)
		case ch.ProducerParallelism < 1 || ch.Producer < 0 || ch.Producer >= ch.ProducerParallelism:
			return fmt.Errorf("input channel %d: producer subtask %d of parallelism %d does not exist", i, ch.Producer, ch.ProducerParallelism)
		case ch.Records < 0:
			return fmt.Errorf("input channel %d: negative record count %d", i, ch.Records)
		case ch.Records > 0 && len(ch.Segments) == 0:
			return fmt.Errorf("input channel %d: %d records but no segments", i, ch.Records)
		case seen[key{ch.Input, ch.Producer}]:
			return fmt.Errorf("input channel %d: input %d from producer subtask %d is listed twice", i, ch.Input, ch.Producer)
		}
		seen[key{ch.Input, ch.Producer}] = true
		end := int64(ChannelStateHeaderLen)
		for _, s := range ch.Segments {
			if s.Length <= 0 || s.Offset < int64(ChannelStateHeaderLen) || s.Offset > size-s.Length {
				return fmt.Errorf("input channel %d: segment [%d,+%d) is empty or lies outside the frames of the %d-byte file", i, s.Offset, s.Length, size)
			}
			if s.Offset < end {
				return fmt.Errorf("input channel %d: segment [%d,+%d) starts before the end %d of the one before it; segments must be in stream order and disjoint", i, s.Offset, s.Length, end)
			}
			end = s.Offset + s.Length
			all = append(all, s)
		}
	}
	slices.SortFunc(all, func(a, b checkpoint.Segment) int { return cmp.Compare(a.Offset, b.Offset) })
	for i := 1; i < len(all); i++ {
		if prev := all[i-1]; all[i].Offset < prev.Offset+prev.Length {
			return fmt.Errorf("segments [%d,+%d) and [%d,+%d) of different input channels overlap", prev.Offset, prev.Length, all[i].Offset, all[i].Length)
		}
	}
	return nil
}
