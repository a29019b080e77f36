package state

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/keygroup"
)

// The canonical key-group block format is shared by every backend: a
// checkpoint or savepoint of one restores into another, and a rescaled
// subtask gathers its key groups from any of them. The helpers here write
// and parse it; see the package doc for the layout and the entry order.

// Section is one state's share of a snapshot: its canonical payload per key
// group. Sections are written in name order, the timers (name "") last:
// processing-time, then event-time.
type Section interface {
	// SectionName is the state's name, "" for both timer sections, which
	// the kind tells apart.
	SectionName() string
	SectionKind() Kind
	// AppendGroup appends the payload of key group kg (uvarint count and
	// entries, in canonical order) and reports whether the group has any
	// entry of this state; when it has none, dst is returned unchanged.
	AppendGroup(dst []byte, kg int) ([]byte, bool, error)
}

// SortSections puts sections into the order WriteBlocks needs: states by
// name, then the processing-time timers, then the event-time timers.
func SortSections(secs []Section) {
	slices.SortStableFunc(secs, func(a, b Section) int {
		an, bn := a.SectionName(), b.SectionName()
		switch {
		case an == bn:
			return cmp.Compare(a.SectionKind(), b.SectionKind())
		case an == "":
			return 1
		case bn == "":
			return -1
		}
		return bytes.Compare([]byte(an), []byte(bn))
	})
}

// WriteBlocks writes one block per key group of kgs that has an entry in
// any section, and returns where each block lies relative to the start of
// w. sections must be sorted (SortSections).
func WriteBlocks(w io.Writer, kgs keygroup.Range, sections []Section) ([]checkpoint.KeyGroupOffset, error) {
	var (
		offsets []checkpoint.KeyGroupOffset
		off     int64
		body    []byte
		payload []byte
		block   []byte
	)
	for kg := kgs.Start; kg < kgs.End; kg++ {
		n := 0
		body = body[:0]
		for _, sec := range sections {
			var ok bool
			var err error
			payload, ok, err = sec.AppendGroup(payload[:0], kg)
			if err != nil {
				return nil, fmt.Errorf("snapshot %s key group %d: %w", sectionLabel(sec.SectionName(), sec.SectionKind()), kg, err)
			}
			if !ok {
				continue
			}
			n++
			body = appendString(body, sec.SectionName())
			body = append(body, byte(sec.SectionKind()))
			body = binary.AppendUvarint(body, uint64(len(payload)))
			body = append(body, payload...)
		}
		if n == 0 {
			continue
		}
		block = append(block[:0], blockVersion)
		block = binary.AppendUvarint(block, uint64(kg))
		block = binary.AppendUvarint(block, uint64(n))
		block = append(block, body...)
		if _, err := w.Write(block); err != nil {
			return nil, fmt.Errorf("write keyed state of key group %d: %w", kg, err)
		}
		offsets = append(offsets, checkpoint.KeyGroupOffset{KeyGroup: kg, Offset: off, Length: int64(len(block))})
		off += int64(len(block))
	}
	return offsets, nil
}

func sectionLabel(name string, k Kind) string {
	if name == "" {
		return k.String()
	}
	return fmt.Sprintf("state %q", name)
}

// ParseBlock checks key group kg's block and calls fn with each section.
// Errors from fn are returned wrapped with the state's name and key group.
func ParseBlock(kg int, blk []byte, fn func(name string, k Kind, payload []byte) error) error {
	bad := func(what string, args ...any) error {
		return fmt.Errorf("key group %d: %s: %w", kg, fmt.Sprintf(what, args...), codec.ErrCorrupt)
	}
	if len(blk) == 0 || blk[0] != blockVersion {
		return bad("unknown block version (want %d); was the file written by a newer weir?", blockVersion)
	}
	r := blk[1:]
	got, n := binary.Uvarint(r)
	if n <= 0 || got != uint64(kg) {
		return bad("block names key group %d", got)
	}
	r = r[n:]
	count, n := binary.Uvarint(r)
	if n <= 0 || count > uint64(len(r)) {
		return bad("bad section count")
	}
	r = r[n:]
	for range count {
		name, n, err := readString(r)
		if err != nil {
			return bad("section name: %v", err)
		}
		r = r[n:]
		if len(r) == 0 {
			return bad("state %q: truncated", name)
		}
		k := Kind(r[0])
		if (k < KindValue || k > KindEventTimers) && !k.HasTTL() || k.isTimers() != (name == "") {
			return bad("state %q: unknown kind %d", name, r[0])
		}
		payload, n, err := readBytes(r[1:])
		if err != nil {
			return bad("state %q: %v", name, err)
		}
		r = r[1+n:]
		if err := fn(name, k, payload); err != nil {
			if name == "" {
				return fmt.Errorf("key group %d: %s: %w", kg, k, err)
			}
			return fmt.Errorf("state %q key group %d: %w", name, kg, err)
		}
	}
	if len(r) != 0 {
		return bad("%d bytes after the last section", len(r))
	}
	return nil
}

// ReadCount reads an entry count at the start of a payload and checks it
// against the bytes left; n is the count's length.
func ReadCount(src []byte) (count int, n int, err error) { return readCount(src) }

// AsCorrupt makes sure a decoding error wraps codec.ErrCorrupt.
func AsCorrupt(err error) error { return asCorrupt(err) }

// AppendFrame appends elem as a frame: uvarint(len(elem)) elem. The raw
// list format: frames concatenate, so appending a list is appending bytes.
func AppendFrame(dst, elem []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(elem)))
	return append(dst, elem...)
}

// NextFrame splits the first frame off src.
func NextFrame(src []byte) (elem, rest []byte, err error) {
	b, n, err := readBytes(src)
	if err != nil {
		return nil, nil, fmt.Errorf("list frame: %s: %w", err, codec.ErrCorrupt)
	}
	return b, src[n:], nil
}

// entrySorter puts a section's entries into canonical order: by the
// encoded key prefixed with its uvarint length, compared as bytes. That is
// the order in which the LSM backend's store holds them (its keys carry
// the same prefix), so both backends write identical bytes for identical
// state. Callers append an entry's key and value to buf and then call
// mark. A sorter is used by one goroutine at a time.
type entrySorter struct {
	buf  []byte
	ents []sortEntry
}

type sortEntry struct {
	key, val, end int // buf[key:val] is the key, buf[val:end] the value
}

func (s *entrySorter) reset() {
	s.buf = s.buf[:0]
	s.ents = s.ents[:0]
}

// mark records the entry whose key was appended to buf from key on and
// whose value from val on, up to the end of buf.
func (s *entrySorter) mark(key, val int) {
	s.ents = append(s.ents, sortEntry{key: key, val: val, end: len(s.buf)})
}

// appendSorted appends uvarint(count) and the entries (key then value) in
// canonical order.
func (s *entrySorter) appendSorted(dst []byte) []byte {
	slices.SortFunc(s.ents, func(a, b sortEntry) int {
		return ComparePrefixed(s.buf[a.key:a.val], s.buf[b.key:b.val])
	})
	dst = binary.AppendUvarint(dst, uint64(len(s.ents)))
	for _, e := range s.ents {
		dst = append(dst, s.buf[e.key:e.end]...)
	}
	return dst
}

// ComparePrefixed compares uvarint(len(a)) a with uvarint(len(b)) b as
// bytes: the canonical order of encoded keys. Uvarints are prefix-free,
// so comparing the prefixes first and the keys second is the same.
func ComparePrefixed(a, b []byte) int {
	var pa, pb [binary.MaxVarintLen64]byte
	na := binary.PutUvarint(pa[:], uint64(len(a)))
	nb := binary.PutUvarint(pb[:], uint64(len(b)))
	if c := bytes.Compare(pa[:na], pb[:nb]); c != 0 {
		return c
	}
	return bytes.Compare(a, b)
}
