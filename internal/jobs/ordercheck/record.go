package ordercheck

import "encoding/binary"

// Flag is what the check stage concluded about a record from its key's
// state.
type Flag int8

// The flags. A record is FlagNone when its seq is exactly the key's
// previous seq plus the number of lanes (or the lane itself for the key's
// first record).
const (
	FlagNone Flag = iota
	// FlagGap: the seq is beyond the expected one; records were skipped.
	FlagGap
	// FlagRegression: the seq is at or below the previous one; records are
	// replayed or reordered.
	FlagRegression
)

// Record is what flows through the job: the source subtask it came from,
// its position in that subtask's sequence, the check stage's verdict and a
// payload that only makes the record big.
type Record struct {
	Src     int64
	Seq     int64
	Flag    Flag
	Payload []byte
}

// keyOf is the record's key: its source subtask and lane. Per key the seqs
// step by lanes.
func keyOf(src, seq, lanes int64) int64 { return src*lanes + seq%lanes }

// payloadHeader is how many leading bytes of a payload carry (src, seq).
const payloadHeader = 16

// newPayload returns n fresh bytes that start with src and seq (when n
// leaves room), so that the sink can tell a payload that travelled with the
// wrong record. Fresh per record on purpose: the data produced must be real
// heap, or a run that buffered without bound would not show it.
func newPayload(n int, src, seq int64) []byte {
	if n == 0 {
		return nil
	}
	p := make([]byte, n)
	if n >= payloadHeader {
		binary.LittleEndian.PutUint64(p, uint64(src))
		binary.LittleEndian.PutUint64(p[8:], uint64(seq))
	}
	return p
}

// payloadOK reports whether p is the payload newPayload made for (src, seq)
// with n bytes.
func payloadOK(p []byte, n int, src, seq int64) bool {
	if len(p) != n {
		return false
	}
	if n < payloadHeader {
		return true
	}
	return binary.LittleEndian.Uint64(p) == uint64(src) && binary.LittleEndian.Uint64(p[8:]) == uint64(seq)
}
