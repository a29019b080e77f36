package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/weirstream/weir/internal/checkpoint"
)

// PartitionRequestMsg subscribes one input channel of a consumer to the
// output of a producer. The frame's channel id is the id the consumer chose
// for this input; the producer sends Data and Event frames with it and
// receives AddCredit and CancelPartition with it.
type PartitionRequestMsg struct {
	Job string
	// Producer and Attempt name the producing execution; a request for a
	// superseded attempt is answered with Error on the channel. With Weak,
	// Attempt is the consumer's attempt instead: the producer creates a
	// channel per consumer attempt, and a newer one supersedes an older.
	Producer checkpoint.TaskID
	Attempt  int
	// Edge is the producer's output edge, Consumer the consuming subtask:
	// together the output channel.
	Edge, Consumer int
	// Credit is the channel's initial credit, at least 1.
	Credit int
	// BufferSize is the most record bytes one Data frame may carry, at
	// least 1 (a larger single record comes alone).
	BufferSize int
	// Weak asks a WEAKLY_CONSISTENT producer for its logged output from
	// From on: the position the consumer's snapshot read up to, zero for a
	// consumer starting afresh. From is zero without Weak. Both travel
	// after BufferSize in every request (a uvarint 0 or 1, then From's two
	// uvarints); added with weak mode's remote channels, without a version
	// bump, as peers of one build always share the layout.
	Weak bool
	From LogPos
	// Held is, on a Weak request, the credit the consumer's gate channel
	// still holds for buffers of an earlier channel of this input (a
	// consumer reconnecting to a producer's new attempt while it has not
	// read all the old one sent): the producer starts with Credit-Held
	// credits, and the consumer grants the rest as it reads them. 0 <=
	// Held < Credit; it travels after From, a uvarint.
	Held int
}

// AppendPartitionRequest appends a PartitionRequest frame on channel. It
// panics on a message DecodePartitionRequest would refuse: the fault is
// this process's, and should not surface as the peer's malformed frame.
func AppendPartitionRequest(dst []byte, channel uint32, m PartitionRequestMsg) []byte {
	if m.Job == "" || len(m.Job) > maxString || m.Credit < 1 || m.BufferSize < 1 || !m.Weak && !m.From.IsZero() ||
		m.Held < 0 || m.Held >= m.Credit || !m.Weak && m.Held != 0 ||
		!inRange(m.Producer.Vertex, m.Producer.Subtask, m.Attempt, m.Edge, m.Consumer, m.Credit, m.BufferSize) {
		panic(fmt.Sprintf("wire: PartitionRequest %+v out of range", m))
	}
	dst, start := beginFrame(dst, Header{Kind: PartitionRequest, Channel: channel})
	dst = m.Append(dst)
	return endFrame(dst, start)
}

// Append appends m's payload encoding.
func (m PartitionRequestMsg) Append(dst []byte) []byte {
	dst = appendString(dst, m.Job)
	for _, v := range [...]int{m.Producer.Vertex, m.Producer.Subtask, m.Attempt, m.Edge, m.Consumer, m.Credit, m.BufferSize} {
		dst = binary.AppendUvarint(dst, uint64(v))
	}
	weak := byte(0)
	if m.Weak {
		weak = 1
	}
	dst = append(dst, weak) // the uvarint 0 or 1
	dst = m.From.append(dst)
	return binary.AppendUvarint(dst, uint64(m.Held))
}

// DecodePartitionRequest decodes a PartitionRequest payload.
func DecodePartitionRequest(b []byte) (PartitionRequestMsg, error) {
	p := payload{kind: PartitionRequest, b: b}
	var m PartitionRequestMsg
	m.Job = p.str("job", 1)
	m.Producer.Vertex = p.count("producer vertex", 0)
	m.Producer.Subtask = p.count("producer subtask", 0)
	m.Attempt = p.count("attempt", 0)
	m.Edge = p.count("output edge", 0)
	m.Consumer = p.count("consumer subtask", 0)
	m.Credit = p.count("initial credit", 1)
	m.BufferSize = p.count("buffer size", 1)
	switch weak := p.uvarint("weak"); {
	case p.err != nil:
	case weak > 1:
		p.fail(DefectValue, "weak %d, want 0 or 1", weak)
	default:
		m.Weak = weak == 1
	}
	m.From = p.logPos("replay from buffers", "replay from records")
	if p.err == nil && !m.Weak && !m.From.IsZero() {
		p.fail(DefectValue, "replay position %d/%d on a request that is not weak", m.From.Buffers, m.From.Records)
	}
	m.Held = p.count("held credit", 0)
	if p.err == nil && (m.Held >= m.Credit || !m.Weak && m.Held != 0) {
		p.fail(DefectValue, "held credit %d of %d on a request (weak: %t): it must be below the credit, and 0 unless weak", m.Held, m.Credit, m.Weak)
	}
	if err := p.end("held credit"); err != nil {
		return PartitionRequestMsg{}, err
	}
	return m, nil
}

func inRange(vs ...int) bool {
	for _, v := range vs {
		if v < 0 || v > maxCount {
			return false
		}
	}
	return true
}
