package wire

import "encoding/binary"

// DataMsg is the payload of a Data frame: the sender's backlog and a run
// of records encoded by the producer task's codec.
type DataMsg struct {
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
	dst = AppendDataHeader(dst, channel, seq, m.Backlog, m.Records, len(m.Bytes))
	return append(dst, m.Bytes...)
}

// AppendDataHeader appends a Data frame's header and its backlog and record
// count; the caller writes the n record bytes next, straight from the
// buffer that holds them. It panics on counts DecodeData would refuse.
func AppendDataHeader(dst []byte, channel uint32, seq uint64, backlog, records, n int) []byte {
	if backlog < 0 || backlog > maxCount || records < 1 || records > maxCount {
		panic("wire: Data frame with backlog or record count out of range")
	}
	size := uvarintLen(uint64(backlog)) + uvarintLen(uint64(records)) + n
	dst = AppendHeader(dst, Header{Kind: Data, Channel: channel, Seq: seq}, size)
	dst = binary.AppendUvarint(dst, uint64(backlog))
	return binary.AppendUvarint(dst, uint64(records))
}

// Append appends m's payload encoding.
func (m DataMsg) Append(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(m.Backlog))
	dst = binary.AppendUvarint(dst, uint64(m.Records))
	return append(dst, m.Bytes...)
}

// DecodeData decodes a Data payload without copying: Bytes aliases b.
func DecodeData(b []byte) (DataMsg, error) {
	p := payload{kind: Data, b: b}
	backlog := p.count("backlog", 0)
	records := p.count("record count", 1)
	if p.err != nil {
		return DataMsg{}, p.err
	}
	return DataMsg{Backlog: backlog, Records: records, Bytes: p.b}, nil
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
