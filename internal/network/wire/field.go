package wire

import (
	"encoding/binary"
	"math"
)

// maxString bounds the strings of control payloads (job names, ResourceIDs,
// build ids): far above any real one, far below a frame.
const maxString = 4096

// maxCount bounds the counts carried as uvarints (backlog, records, credit,
// indices) so they fit an int on every platform and never overflow sums.
const maxCount = math.MaxInt32

// payload reads the fields of one payload front to back. The first error
// sticks; later reads return zero values, so a decoder reads all fields and
// checks err once.
type payload struct {
	kind Kind
	b    []byte
	err  error
}

func (p *payload) fail(d Defect, format string, args ...any) {
	if p.err == nil {
		p.err = malformed(p.kind, d, format, args...)
	}
	p.b = nil
}

// uvarint reads a canonical unsigned varint: an overlong encoding (a final
// 0x00 byte after a continuation) is refused, so every accepted payload
// re-encodes to the same bytes.
func (p *payload) uvarint(field string) uint64 {
	if p.err != nil {
		return 0
	}
	v, n := binary.Uvarint(p.b)
	switch {
	case n == 0:
		p.fail(DefectTruncated, "%s: payload ends inside the varint", field)
		return 0
	case n < 0:
		p.fail(DefectValue, "%s: varint overflows 64 bits", field)
		return 0
	case n > 1 && p.b[n-1] == 0:
		p.fail(DefectValue, "%s: overlong varint encoding", field)
		return 0
	}
	p.b = p.b[n:]
	return v
}

// count reads a uvarint in [lo, maxCount].
func (p *payload) count(field string, lo int) int {
	v := p.uvarint(field)
	if p.err != nil {
		return 0
	}
	if v < uint64(lo) || v > maxCount {
		p.fail(DefectValue, "%s %d, want %d to %d", field, v, lo, maxCount)
		return 0
	}
	return int(v)
}

func (p *payload) u8(field string) uint8 {
	if p.err != nil {
		return 0
	}
	if len(p.b) < 1 {
		p.fail(DefectTruncated, "%s: payload ends before it", field)
		return 0
	}
	v := p.b[0]
	p.b = p.b[1:]
	return v
}

func (p *payload) u16(field string) uint16 {
	if p.err != nil {
		return 0
	}
	if len(p.b) < 2 {
		p.fail(DefectTruncated, "%s: %d of 2 bytes", field, len(p.b))
		return 0
	}
	v := binary.BigEndian.Uint16(p.b)
	p.b = p.b[2:]
	return v
}

func (p *payload) u64(field string) uint64 {
	if p.err != nil {
		return 0
	}
	if len(p.b) < 8 {
		p.fail(DefectTruncated, "%s: %d of 8 bytes", field, len(p.b))
		return 0
	}
	v := binary.BigEndian.Uint64(p.b)
	p.b = p.b[8:]
	return v
}

// bytes reads n raw bytes, aliasing the payload.
func (p *payload) bytes(field string, n int) []byte {
	if p.err != nil {
		return nil
	}
	if len(p.b) < n {
		p.fail(DefectTruncated, "%s: %d of %d bytes", field, len(p.b), n)
		return nil
	}
	v := p.b[:n:n]
	p.b = p.b[n:]
	return v
}

// str reads a uvarint length and that many bytes as a string of at least
// minLen bytes.
func (p *payload) str(field string, minLen int) string {
	n := p.uvarint(field + " length")
	if p.err != nil {
		return ""
	}
	if n < uint64(minLen) || n > maxString {
		p.fail(DefectValue, "%s of %d bytes, want %d to %d", field, n, minLen, maxString)
		return ""
	}
	return string(p.bytes(field, int(n)))
}

// end reports the sticky error, or trailing bytes after the last field.
func (p *payload) end(what string) error {
	if p.err == nil && len(p.b) > 0 {
		p.fail(DefectTrailing, "%d bytes after the %s", len(p.b), what)
	}
	return p.err
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}
