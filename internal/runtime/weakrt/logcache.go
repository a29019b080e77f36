package weakrt

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/network"
)

// A producer's snapshot stores every entry its output logs retain
// (logfile.go). Consumers snapshot about as often as producers, so an
// entry is usually retained by two or more of the producer's snapshots in
// a row; encoding it again for each with the edge's codec was most of
// what storing the logs cost. logCache keeps each entry's stored form from
// the first snapshot that encoded it, aligned with the sender's payloads
// and released with them, so a snapshot encodes only what was appended
// since the previous one and copies nothing it encoded before.
//
// The stored forms live in append-only chunks: bytes once written into a
// chunk are never written again, so a snapshot hands its sections to its
// asynchronous part (which writes the file) without copying, and the
// garbage collector frees a chunk once no retained entry and no pending
// snapshot refers to it. Entries encoded one after another sit back to
// back in a chunk, and the snapshot writes such runs as one segment.
//
// Memory: a retained entry's stored form (about 2–3 bytes a small-int
// record, the codec's size otherwise) beside its batch, plus the unused
// rest of the sender's current chunk, sized by what its previous snapshot
// encoded (logChunkMin to logChunkMax) and let go once the log is empty.
type logCache struct {
	// secs[i] is the stored form of the sender's payloads[i], for i <
	// len(secs); entries appended since the last snapshot have none yet.
	secs  []logSection
	chunk []byte // the current chunk; bytes before len(chunk) are immutable
	// next is the size of the next chunk: what the previous snapshot
	// encoded, doubled for each further chunk the snapshot needs.
	next int
}

// logSection is one entry's stored form and the position the entry was
// stamped with, which checks that the cache is aligned with the payloads.
type logSection struct {
	bufs, recs uint64
	b          []byte
}

const (
	logChunkMin = 4 << 10
	logChunkMax = 1 << 20
)

// release forgets the stored forms of the n oldest entries, which the
// sender's log dropped (called with the sender's mu held, from drop).
func (c *logCache) release(n int) {
	n = min(n, len(c.secs))
	clear(c.secs[:n]) // no chunk pinned by a released entry
	c.secs = c.secs[n:]
	if len(c.secs) == 0 {
		// Nothing refers to the current chunk any more but the pending
		// snapshots: an idle sender holds no memory for its log.
		c.secs, c.chunk = nil, nil
	}
}

// reset forgets every stored form.
func (c *logCache) reset() {
	c.release(len(c.secs))
}

// reserve makes room for n more bytes in the current chunk.
func (c *logCache) reserve(n int) {
	if cap(c.chunk)-len(c.chunk) >= n {
		return
	}
	size := min(max(c.next+c.next/4, logChunkMin), logChunkMax)
	c.next = 2 * size
	c.chunk = make([]byte, 0, max(size, n))
}

// logSectionHeaderMax bounds an entry's stored form without its payload:
// a kind byte and three uvarints (position, and a batch's length).
const logSectionHeaderMax = 1 + 3*binary.MaxVarintLen64

// encode stores entry b (a payload of the sender whose codec is codec) in
// the current chunk as logfile.go lays it out, and returns its
// stored form. scratch is the caller's buffer for the codec's output.
func (c *logCache) encode(b network.Buffer, codec dataflow.ChannelCodec, scratch *[]byte) ([]byte, error) {
	var kind byte
	switch {
	case b.Kind == network.Data && b.Data == nil:
		kind = logEntryResumed
	case b.Kind == network.Data:
		kind = logEntryData
		if codec == nil {
			return nil, fmt.Errorf("no codec for its records")
		}
		*scratch = codec.AppendBatch((*scratch)[:0], b.Data)
	case b.Kind == network.Watermark:
		kind = logEntryWatermark
	case b.Kind == network.WatermarkStatus:
		kind = logEntryStatus
	case b.Kind == network.EndOfData:
		kind = logEntryEndOfData
	case b.Kind == network.EndOfPartition:
		kind = logEntryEndOfPartition
	default:
		return nil, fmt.Errorf("entry of kind %s cannot be stored", b.Kind)
	}
	n := logSectionHeaderMax
	if kind == logEntryData {
		n += len(*scratch)
	}
	c.reserve(n)
	start := len(c.chunk)
	// Within the reserved capacity: the appends below never reallocate.
	dst := append(c.chunk, kind)
	dst = binary.AppendUvarint(dst, b.LogBuffers)
	dst = binary.AppendUvarint(dst, b.LogRecords)
	switch kind {
	case logEntryData:
		dst = binary.AppendUvarint(dst, uint64(len(*scratch)))
		dst = append(dst, *scratch...)
	case logEntryWatermark:
		dst = binary.AppendVarint(dst, b.Watermark)
	case logEntryStatus:
		idle := byte(0)
		if b.Idle {
			idle = 1
		}
		dst = append(dst, idle)
	}
	c.chunk = dst
	return dst[start:], nil
}

// sections adds the stored form of every entry of payloads (the sender's,
// mu held) to snap, encoding those no earlier snapshot encoded.
func (c *logCache) sections(payloads []network.Buffer, codec dataflow.ChannelCodec, snap *logSnapshot) error {
	encoded := 0
	defer func() {
		if encoded > 0 {
			c.next = encoded
		}
	}()
	if len(c.secs) > len(payloads) {
		c.reset() // not aligned with the payloads: see below
	}
	for i, b := range payloads {
		if i < len(c.secs) {
			if s := c.secs[i]; s.bufs == b.LogBuffers && s.recs == b.LogRecords {
				snap.add(s.b)
				continue
			}
			// Not aligned with the payloads (a bug elsewhere): encode
			// anew rather than store another entry's form.
			clear(c.secs[i:])
			c.secs = c.secs[:i]
		}
		sec, err := c.encode(b, codec, &snap.scratch)
		if err != nil {
			return err
		}
		encoded += len(sec)
		c.secs = append(c.secs, logSection{bufs: b.LogBuffers, recs: b.LogRecords, b: sec})
		snap.add(sec)
	}
	return nil
}

// logSnapshot is the content of a task's output log file, taken on the
// task goroutine and written by the snapshot's asynchronous part: byte
// segments, in order, that nothing writes to again.
type logSnapshot struct {
	segs [][]byte
	size int
	// hdr holds the channels' headers; channels counts them.
	hdr      []byte
	channels int
	// scratch is the codec's output buffer while the snapshot encodes.
	scratch []byte
}

// add appends b to the file, to the last segment if b follows it in
// memory.
func (l *logSnapshot) add(b []byte) {
	if len(b) == 0 {
		return
	}
	l.size += len(b)
	if n := len(l.segs); n > 0 {
		last := l.segs[n-1]
		if len(last) < cap(last) && &last[:len(last)+1][len(last)] == &b[0] {
			l.segs[n-1] = last[:len(last)+len(b)]
			return
		}
	}
	l.segs = append(l.segs, b)
}

// fileHeader is the file's format header and channel count.
func (l *logSnapshot) fileHeader() []byte {
	return binary.AppendUvarint([]byte(weakLogHeader), uint64(l.channels))
}

// header adds channel (k, j)'s header: edge, consumer subtask, base
// buffers and records, entry count.
func (l *logSnapshot) header(k, j int, baseBufs, baseRecs uint64, entries int) {
	l.channels++
	start := len(l.hdr)
	l.hdr = binary.AppendUvarint(l.hdr, uint64(k))
	l.hdr = binary.AppendUvarint(l.hdr, uint64(j))
	l.hdr = binary.AppendUvarint(l.hdr, baseBufs)
	l.hdr = binary.AppendUvarint(l.hdr, baseRecs)
	l.hdr = binary.AppendUvarint(l.hdr, uint64(entries))
	// A later header may move hdr; this one keeps the bytes it has.
	l.add(l.hdr[start:len(l.hdr):len(l.hdr)])
}

// WriteTo writes the file's bytes to w: the format header, then the
// channels.
func (l *logSnapshot) WriteTo(w io.Writer) (int64, error) {
	m, err := w.Write(l.fileHeader())
	n := int64(m)
	if err != nil {
		return n, err
	}
	for _, s := range l.segs {
		m, err := w.Write(s)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// bytes returns the file's bytes in one slice (tests).
func (l *logSnapshot) bytes() []byte {
	out := l.fileHeader()
	for _, s := range l.segs {
		out = append(out, s...)
	}
	return out
}
