package wire

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/network"
)

// Event codes on the wire. They are fixed here rather than taken from
// network.Kind's values, so reordering that in-memory enum cannot change
// the protocol.
const (
	codeBarrier        = 1
	codeCancelBarrier  = 2
	codeEndOfPartition = 3
	codeEndOfData      = 4
	// A priority barrier or cancel marker: the ordinary code's fields,
	// then the event's Seq (u64).
	codePriorityBarrier = 5
	codePriorityCancel  = 6
	// An announcement (network.Announcement) of a barrier queued behind
	// data: the barrier's fields, then its Seq. Always a priority event.
	codeAnnouncement = 7
	// An event-time watermark (network.Watermark): the timestamp, i64
	// milliseconds. Never a priority event.
	codeWatermark = 8
	// A watermark status change (network.WatermarkStatus): one byte, 1 =
	// idle, 0 = active again. Never a priority event.
	codeWatermarkStatus = 9
)

// EventMsg is the payload of an Event frame, shaped like the event fields
// of network.Buffer so the connection code converts field by field.
type EventMsg struct {
	// Kind is network.Barrier, CancelBarrier, EndOfPartition, EndOfData,
	// Announcement, Watermark or WatermarkStatus.
	Kind network.Kind
	// Barrier is set for Barrier and Announcement (the announced
	// barrier). Its timestamp travels as Unix
	// nanoseconds; the zero time travels as 0 and 0 decodes to the zero
	// time.
	Barrier checkpoint.Barrier
	// Cancel is the checkpoint a CancelBarrier aborts.
	Cancel checkpoint.ID
	// Priority marks a barrier or cancel marker that overtook the data
	// queued at the sender (network.Channel.SendPriority); only those two
	// kinds may carry it, and an Announcement always does.
	Priority bool
	// Seq travels with priority events only: the number of Data buffers
	// the producer had sent on the channel before the event in channel
	// order (network.Buffer.Seq), some of which may still follow it on the
	// stream. An ordinary event's Seq is implied by its position.
	Seq uint64
	// Watermark is the event time of a Watermark, in milliseconds.
	Watermark int64
	// Idle is set for a WatermarkStatus saying the producer went idle,
	// clear for one saying it is active again.
	Idle bool
	// Pos is the event's position in a WEAKLY_CONSISTENT producer's
	// in-flight log, zero for none. A nonzero one travels first in the
	// payload, announced by FlagLogPos in the header.
	Pos LogPos
}

// AppendEvent appends an Event frame on channel with sequence number seq.
// It panics on a kind that is not an event: the caller converts buffers it
// built.
func AppendEvent(dst []byte, channel uint32, seq uint64, m EventMsg) []byte {
	dst, start := beginFrame(dst, Header{Kind: Event, Flags: m.Flags(), Channel: channel, Seq: seq})
	dst = m.Append(dst)
	return endFrame(dst, start)
}

// Flags returns the header flags of an Event frame carrying m: FlagLogPos
// with a position, else 0.
func (m EventMsg) Flags() uint8 { return m.Pos.flags() }

// Append appends m's payload encoding, which starts with m.Pos if that is
// not zero: the frame's header needs m.Flags(). It panics like
// AppendEvent.
func (m EventMsg) Append(dst []byte) []byte {
	if !m.Pos.IsZero() {
		dst = m.Pos.append(dst)
	}
	if m.Kind == network.Announcement {
		if !m.Priority {
			panic("wire: announcement without priority")
		}
		dst = append(dst, codeAnnouncement)
		dst = appendBarrier(dst, m.Barrier)
		return binary.BigEndian.AppendUint64(dst, m.Seq)
	}
	var prio byte // added to the code of a priority event
	if m.Priority {
		if m.Kind != network.Barrier && m.Kind != network.CancelBarrier {
			panic("wire: priority event of kind " + m.Kind.String())
		}
		prio = codePriorityBarrier - codeBarrier
	}
	switch m.Kind {
	case network.Barrier:
		dst = append(dst, codeBarrier+prio)
		dst = appendBarrier(dst, m.Barrier)
	case network.CancelBarrier:
		if m.Cancel < 0 {
			panic("wire: cancel barrier with negative id")
		}
		dst = append(dst, codeCancelBarrier+prio)
		dst = binary.BigEndian.AppendUint64(dst, uint64(m.Cancel))
	case network.EndOfPartition:
		return append(dst, codeEndOfPartition)
	case network.EndOfData:
		return append(dst, codeEndOfData)
	case network.Watermark:
		dst = append(dst, codeWatermark)
		return binary.BigEndian.AppendUint64(dst, uint64(m.Watermark))
	case network.WatermarkStatus:
		var idle byte
		if m.Idle {
			idle = 1
		}
		return append(dst, codeWatermarkStatus, idle)
	default:
		panic("wire: event of kind " + m.Kind.String())
	}
	if m.Priority {
		dst = binary.BigEndian.AppendUint64(dst, m.Seq)
	}
	return dst
}

// appendBarrier appends a barrier's id, Unix-nano timestamp and kind.
func appendBarrier(dst []byte, b checkpoint.Barrier) []byte {
	var nanos int64
	if !b.Timestamp.IsZero() {
		nanos = b.Timestamp.UnixNano()
	}
	if b.ID < 0 || b.Kind > checkpoint.Savepoint {
		panic("wire: barrier with negative id or unknown checkpoint kind")
	}
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.ID))
	dst = binary.BigEndian.AppendUint64(dst, uint64(nanos))
	return append(dst, byte(b.Kind))
}

// barrier reads the fields appendBarrier wrote.
func (p *payload) barrier() checkpoint.Barrier {
	var b checkpoint.Barrier
	b.ID = p.checkpointID("barrier id")
	if nanos := int64(p.u64("barrier timestamp")); nanos != 0 {
		b.Timestamp = time.Unix(0, nanos)
	}
	b.Kind = checkpoint.Kind(p.u8("checkpoint kind"))
	if p.err == nil && b.Kind > checkpoint.Savepoint {
		p.fail(DefectValue, "checkpoint kind %d, want 0 to %d", b.Kind, checkpoint.Savepoint)
	}
	return b
}

// DecodeEvent decodes the payload of an Event frame with header flags
// (Frame.Flags, which say whether a log position comes first).
func DecodeEvent(flags uint8, b []byte) (EventMsg, error) {
	p := payload{kind: Event, b: b}
	var m EventMsg
	pos := p.flaggedPos(flags)
	code := p.u8("event code")
	if code == codePriorityBarrier || code == codePriorityCancel {
		m.Priority = true
		code -= codePriorityBarrier - codeBarrier
	}
	switch {
	case p.err != nil:
	case code == codeBarrier:
		m.Kind = network.Barrier
		m.Barrier = p.barrier()
	case code == codeAnnouncement:
		m.Kind, m.Priority = network.Announcement, true
		m.Barrier = p.barrier()
	case code == codeCancelBarrier:
		m.Kind = network.CancelBarrier
		m.Cancel = p.checkpointID("cancelled barrier id")
	case code == codeEndOfPartition:
		m.Kind = network.EndOfPartition
	case code == codeEndOfData:
		m.Kind = network.EndOfData
	case code == codeWatermark:
		m.Kind = network.Watermark
		m.Watermark = int64(p.u64("watermark timestamp"))
	case code == codeWatermarkStatus:
		m.Kind = network.WatermarkStatus
		switch idle := p.u8("watermark status"); {
		case p.err != nil:
		case idle > 1:
			p.fail(DefectValue, "watermark status %d, want 0 (active) or 1 (idle)", idle)
		default:
			m.Idle = idle == 1
		}
	default:
		p.fail(DefectValue, "event code %d, want %d to %d", code, codeBarrier, codeWatermarkStatus)
	}
	if m.Priority {
		m.Seq = p.u64("priority event seq")
	}
	if err := p.end(m.Kind.String() + " event"); err != nil {
		return EventMsg{}, err
	}
	m.Pos = pos
	return m, nil
}

func (p *payload) checkpointID(field string) checkpoint.ID {
	v := p.u64(field)
	if p.err == nil && v > math.MaxInt64 {
		p.fail(DefectValue, "%s %d out of range", field, v)
		return 0
	}
	return checkpoint.ID(v)
}
