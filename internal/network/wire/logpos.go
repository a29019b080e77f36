package wire

import "encoding/binary"

// FlagLogPos is the header flag of a Data or Event frame whose payload
// starts with a LogPos: two uvarints, Buffers then Records, before the
// kind's own fields. It is set exactly when the position is not zero, so
// an accepted frame re-encodes to its bytes; no other flag bit, and this
// one on no other kind, is defined.
const FlagLogPos uint8 = 0x01

// LogPos is a position in the in-flight log a WEAKLY_CONSISTENT producer
// keeps per output channel (network.Buffer.LogBuffers and LogRecords): the
// log entry's index and the records logged up to and including it. Data
// and Event frames carry the position of their buffer, a weak partition
// request the position to replay from, a Release the position the
// consumer's completed snapshot covers. The zero LogPos is no position.
type LogPos struct {
	Buffers, Records uint64
}

// IsZero reports whether p is no position (a buffer not logged, a
// consumer starting at the log's beginning).
func (p LogPos) IsZero() bool { return p == LogPos{} }

// flags returns the header flags of a Data or Event frame carrying p.
func (p LogPos) flags() uint8 {
	if p.IsZero() {
		return 0
	}
	return FlagLogPos
}

// size is the bytes append writes for p.
func (p LogPos) size() int {
	return uvarintLen(p.Buffers) + uvarintLen(p.Records)
}

// append appends p's two uvarints.
func (p LogPos) append(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, p.Buffers)
	return binary.AppendUvarint(dst, p.Records)
}

// logPos reads the two uvarints of a LogPos, naming them buffers and
// records (constants: a concatenation here would allocate per frame).
func (p *payload) logPos(buffers, records string) LogPos {
	return LogPos{Buffers: p.uvarint(buffers), Records: p.uvarint(records)}
}

// flaggedPos reads the log position that starts the payload of a Data or
// Event frame whose header has flags: none without FlagLogPos, a nonzero
// one with it (a zero position travels without the flag).
func (p *payload) flaggedPos(flags uint8) LogPos {
	if flags&FlagLogPos == 0 {
		return LogPos{}
	}
	pos := p.logPos("log position buffers", "log position records")
	if p.err == nil && pos.IsZero() {
		p.fail(DefectValue, "log position 0/0 with the log-position flag: a zero position travels without it")
	}
	return pos
}

// AppendRelease appends a Release frame on channel: the consumer's
// completed snapshot covers the producer's log up to p, which may drop
// what p covers.
func AppendRelease(dst []byte, channel uint32, p LogPos) []byte {
	dst = AppendHeader(dst, Header{Kind: Release, Channel: channel}, p.size())
	return p.append(dst)
}

// DecodeRelease decodes a Release payload.
func DecodeRelease(b []byte) (LogPos, error) {
	p := payload{kind: Release, b: b}
	pos := p.logPos("released buffers", "released records")
	if err := p.end("released position"); err != nil {
		return LogPos{}, err
	}
	return pos, nil
}
