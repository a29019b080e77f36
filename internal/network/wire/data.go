package wire

import "encoding/binary"

// DataMsg is the payload of a Data frame: the sender's backlog and a run
// of records encoded by the producer task's codec.
type DataMsg struct {
	// Pos is the buffer's position in a WEAKLY_CONSISTENT producer's
	// in-flight log, zero for none. A nonzero one travels first in the
	// payload, announced by FlagLogPos in the header.
	Pos LogPos
	// Backlog is the data buffers the sender still has queued for this
	// channel after this one (Flink's backlog announcement).
	Backlog int
	// Records is the number of records in Bytes, at least 1.
	Records int
	// Bytes aliases the frame; the consumer copies it into a receive buffer
	// or decodes it before the Reader's next frame.
	Bytes []byte
}

// AppendData appends a Data frame on channel with sequence number seq.
func AppendData(dst []byte, channel uint32, seq uint64, m DataMsg) []byte {
	dst = AppendDataHeader(dst, channel, seq, m.Pos, m.Backlog, m.Records, len(m.Bytes))
	return append(dst, m.Bytes...)
}

// AppendDataHeader appends a Data frame's header, its log position (if
// not zero, with FlagLogPos), backlog and record count; the caller writes
// the n record bytes next, straight from the buffer that holds them. It
// panics on counts DecodeData would refuse.
func AppendDataHeader(dst []byte, channel uint32, seq uint64, pos LogPos, backlog, records, n int) []byte {
	if backlog < 0 || backlog > maxCount || records < 1 || records > maxCount {
		panic("wire: Data frame with backlog or record count out of range")
	}
	size := uvarintLen(uint64(backlog)) + uvarintLen(uint64(records)) + n
	if !pos.IsZero() {
		size += pos.size()
	}
	dst = AppendHeader(dst, Header{Kind: Data, Flags: pos.flags(), Channel: channel, Seq: seq}, size)
	if !pos.IsZero() {
		dst = pos.append(dst)
	}
	dst = binary.AppendUvarint(dst, uint64(backlog))
	return binary.AppendUvarint(dst, uint64(records))
}

// Flags returns the header flags of a Data frame carrying m: FlagLogPos
// with a position, else 0.
func (m DataMsg) Flags() uint8 { return m.Pos.flags() }

// Append appends m's payload encoding, which starts with m.Pos if that is
// not zero: the frame's header needs m.Flags().
func (m DataMsg) Append(dst []byte) []byte {
	if !m.Pos.IsZero() {
		dst = m.Pos.append(dst)
	}
	dst = binary.AppendUvarint(dst, uint64(m.Backlog))
	dst = binary.AppendUvarint(dst, uint64(m.Records))
	return append(dst, m.Bytes...)
}

// DecodeData decodes the payload of a Data frame with header flags
// (Frame.Flags, which say whether a log position comes first) without
// copying: Bytes aliases b.
func DecodeData(flags uint8, b []byte) (DataMsg, error) {
	p := payload{kind: Data, b: b}
	pos := p.flaggedPos(flags)
	backlog := p.count("backlog", 0)
	records := p.count("record count", 1)
	if p.err != nil {
		return DataMsg{}, p.err
	}
	return DataMsg{Pos: pos, Backlog: backlog, Records: records, Bytes: p.b}, nil
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
