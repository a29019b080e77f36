package wire

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/network"
)

// sample is one frame of every kind and payload variant, built with the
// package's appenders.
type sample struct {
	name  string
	frame []byte
}

func samples() []sample {
	ts := time.Unix(1_700_000_000, 123_456_789)
	return []sample{
		{"hello", AppendHello(nil, Hello, HelloMsg{From: "tm-1", To: "tm-2", BuildID: "b3f1"})},
		{"hello-ok", AppendHello(nil, HelloOK, HelloMsg{From: "tm-2", To: "tm-1"})},
		{"partition-request", AppendPartitionRequest(nil, 7, PartitionRequestMsg{
			Job: "demo", Producer: checkpoint.TaskID{Vertex: 2, Subtask: 3}, Attempt: 1,
			Edge: 0, Consumer: 300, Credit: 4, BufferSize: 32 << 10})},
		{"data", AppendData(nil, 7, 11, DataMsg{Backlog: 3, Records: 2, Bytes: []byte("\x02ab\x01c")})},
		{"data-empty-records", AppendData(nil, 1<<31, 1<<40, DataMsg{Backlog: 0, Records: 5, Bytes: nil})},
		{"barrier", AppendEvent(nil, 7, 12, EventMsg{Kind: network.Barrier,
			Barrier: checkpoint.Barrier{ID: 9, Timestamp: ts, Kind: checkpoint.Final}})},
		{"barrier-zero-time", AppendEvent(nil, 7, 0, EventMsg{Kind: network.Barrier,
			Barrier: checkpoint.Barrier{ID: 1, Kind: checkpoint.Savepoint}})},
		{"cancel-barrier", AppendEvent(nil, 7, 13, EventMsg{Kind: network.CancelBarrier, Cancel: 9})},
		{"priority-barrier", AppendEvent(nil, 7, 16, EventMsg{Kind: network.Barrier, Priority: true, Seq: 1 << 40,
			Barrier: checkpoint.Barrier{ID: 10, Timestamp: ts}})},
		{"priority-cancel", AppendEvent(nil, 7, 17, EventMsg{Kind: network.CancelBarrier, Priority: true, Seq: 3, Cancel: 10})},
		{"priority-announcement", AppendEvent(nil, 7, 18, EventMsg{Kind: network.Announcement, Priority: true, Seq: 40,
			Barrier: checkpoint.Barrier{ID: 11, Timestamp: ts}})},
		{"end-of-data", AppendEvent(nil, 7, 14, EventMsg{Kind: network.EndOfData})},
		{"watermark", AppendEvent(nil, 7, 19, EventMsg{Kind: network.Watermark, Watermark: 1_700_000_000_123})},
		{"watermark-min", AppendEvent(nil, 7, 20, EventMsg{Kind: network.Watermark, Watermark: math.MinInt64})},
		{"watermark-negative", AppendEvent(nil, 7, 21, EventMsg{Kind: network.Watermark, Watermark: -5})},
		{"watermark-idle", AppendEvent(nil, 7, 22, EventMsg{Kind: network.WatermarkStatus, Idle: true})},
		{"watermark-active", AppendEvent(nil, 7, 23, EventMsg{Kind: network.WatermarkStatus})},
		{"end-of-partition", AppendEvent(nil, 7, 15, EventMsg{Kind: network.EndOfPartition})},
		{"add-credit", AppendAddCredit(nil, 7, 300)},
		{"cancel-partition", AppendCancelPartition(nil, 7)},
		{"error-fatal", AppendError(nil, 0, "frame 12, expected 11: frames lost or reordered")},
		{"error-channel", AppendError(nil, 7, "")},
		{"prioritize", AppendPrioritize(nil, 7, 12)},
		{"partition-request-weak", AppendPartitionRequest(nil, 8, PartitionRequestMsg{
			Job: "demo", Producer: checkpoint.TaskID{Vertex: 1}, Attempt: 4,
			Edge: 1, Consumer: 2, Credit: 2, BufferSize: 1024, Weak: true, From: LogPos{Buffers: 300, Records: 1 << 40}})},
		{"partition-request-weak-fresh", AppendPartitionRequest(nil, 8, PartitionRequestMsg{
			Job: "demo", Credit: 2, BufferSize: 1024, Weak: true})},
		{"partition-request-weak-held", AppendPartitionRequest(nil, 8, PartitionRequestMsg{
			Job: "demo", Credit: 4, BufferSize: 1024, Weak: true, From: LogPos{Buffers: 9, Records: 70}, Held: 3})},
		{"data-positioned", AppendData(nil, 7, 24, DataMsg{Pos: LogPos{Buffers: 5, Records: 130}, Backlog: 1, Records: 2, Bytes: []byte("\x02ab\x01c")})},
		{"data-positioned-records-0", AppendData(nil, 7, 25, DataMsg{Pos: LogPos{Buffers: 1}, Records: 1, Bytes: []byte{0}})},
		{"watermark-positioned", AppendEvent(nil, 7, 26, EventMsg{Kind: network.Watermark, Watermark: 42, Pos: LogPos{Buffers: 6, Records: 130}})},
		{"eop-positioned", AppendEvent(nil, 7, 27, EventMsg{Kind: network.EndOfPartition, Pos: LogPos{Buffers: 1 << 63, Records: 1<<64 - 1}})},
		{"priority-barrier-positioned", AppendEvent(nil, 7, 28, EventMsg{Kind: network.Barrier, Priority: true, Seq: 2,
			Barrier: checkpoint.Barrier{ID: 12, Timestamp: ts}, Pos: LogPos{Buffers: 7, Records: 131}})},
		{"release", AppendRelease(nil, 7, LogPos{Buffers: 6, Records: 130})},
		{"release-zero", AppendRelease(nil, 9, LogPos{})},
	}
}

// decodePayload decodes f's payload with its kind's decoder and re-encodes
// the decoded message with the kind's appender: for an accepted payload the
// result must equal the frame's bytes. The returned string describes the
// message, for golden comparisons.
func reencode(f Frame) ([]byte, string, error) {
	switch f.Kind {
	case Hello, HelloOK:
		m, err := DecodeHello(f.Kind, f.Payload)
		if err != nil {
			return nil, "", err
		}
		return AppendHello(nil, f.Kind, m), fmt.Sprintf("%+v", m), nil
	case PartitionRequest:
		m, err := DecodePartitionRequest(f.Payload)
		if err != nil {
			return nil, "", err
		}
		return AppendPartitionRequest(nil, f.Channel, m), fmt.Sprintf("%+v", m), nil
	case Data:
		m, err := DecodeData(f.Flags, f.Payload)
		if err != nil {
			return nil, "", err
		}
		return AppendData(nil, f.Channel, f.Seq, m), describePos(m.Pos) + fmt.Sprintf("backlog=%d records=%d bytes=%q", m.Backlog, m.Records, m.Bytes), nil
	case Event:
		m, err := DecodeEvent(f.Flags, f.Payload)
		if err != nil {
			return nil, "", err
		}
		return AppendEvent(nil, f.Channel, f.Seq, m), describePos(m.Pos) + describeEvent(m), nil
	case Release:
		pos, err := DecodeRelease(f.Payload)
		if err != nil {
			return nil, "", err
		}
		return AppendRelease(nil, f.Channel, pos), fmt.Sprintf("%+v", pos), nil
	case AddCredit:
		n, err := DecodeAddCredit(f.Payload)
		if err != nil {
			return nil, "", err
		}
		return AppendAddCredit(nil, f.Channel, n), fmt.Sprintf("credit=%d", n), nil
	case CancelPartition:
		if err := DecodeCancelPartition(f.Payload); err != nil {
			return nil, "", err
		}
		return AppendCancelPartition(nil, f.Channel), "", nil
	case Prioritize:
		id, err := DecodePrioritize(f.Payload)
		if err != nil {
			return nil, "", err
		}
		return AppendPrioritize(nil, f.Channel, id), fmt.Sprintf("checkpoint=%d", id), nil
	case Error:
		msg := DecodeError(f.Payload)
		return AppendError(nil, f.Channel, msg), fmt.Sprintf("%q", msg), nil
	}
	return nil, "", errors.New("unknown kind passed the header check")
}

// describePos renders a log position as "@buffers/records ", nothing for
// none.
func describePos(p LogPos) string {
	if p.IsZero() {
		return ""
	}
	return fmt.Sprintf("@%d/%d ", p.Buffers, p.Records)
}

func describeEvent(m EventMsg) string {
	if m.Priority {
		return fmt.Sprintf("priority seq=%d ", m.Seq) + describeEvent(EventMsg{Kind: m.Kind, Barrier: m.Barrier, Cancel: m.Cancel})
	}
	switch m.Kind {
	case network.Barrier, network.Announcement:
		ns := int64(0)
		if !m.Barrier.Timestamp.IsZero() {
			ns = m.Barrier.Timestamp.UnixNano()
		}
		return fmt.Sprintf("%s id=%d ts=%d kind=%s", m.Kind, m.Barrier.ID, ns, m.Barrier.Kind)
	case network.CancelBarrier:
		return fmt.Sprintf("cancel id=%d", m.Cancel)
	case network.Watermark:
		return fmt.Sprintf("watermark ts=%d", m.Watermark)
	case network.WatermarkStatus:
		return fmt.Sprintf("wm-status idle=%t", m.Idle)
	}
	return m.Kind.String()
}

// defectOf returns the defect of a malformed error, or 0.
func defectOf(err error) Defect {
	var me *MalformedError
	if errors.As(err, &me) {
		return me.Defect
	}
	return 0
}

var samplesBarrier = checkpoint.Barrier{ID: 3, Timestamp: time.Unix(5, 6), Kind: checkpoint.Periodic}
