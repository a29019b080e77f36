package network

import (
	"math"
	"strconv"

	"github.com/weirstream/weir/internal/checkpoint"
)

// Kind says what a Buffer carries.
type Kind uint8

const (
	// Data carries a batch of records and takes one credit.
	Data Kind = iota
	// Barrier carries a checkpoint barrier.
	Barrier
	// CancelBarrier tells the receiver to abort the alignment of a checkpoint.
	CancelBarrier
	// EndOfPartition is the last buffer of a channel; nothing may follow it.
	EndOfPartition
	// EndOfData says the producer will send no more records; barriers still
	// follow (the final checkpoint travels after it).
	EndOfData
	// Announcement tells the consumer early that a Barrier (carried in
	// Buffer.Barrier, with the barrier's Seq) is queued on a channel behind
	// other buffers. A gate made WithAnnouncements creates one per ordinary
	// barrier in its priority section, so an alignment timeout can start
	// while the barrier itself is still stuck behind backlog.
	Announcement
	// Watermark carries an event-time watermark (Buffer.Watermark): the
	// producer will send no more records with a smaller timestamp on this
	// channel. It travels in order with data, so it follows every record
	// emitted before it, takes no credit and never overtakes: a watermark
	// ahead of its records would declare them late.
	Watermark
	// WatermarkStatus says the producer's output became idle (Buffer.Idle
	// true: it sends no records for now, so consumers must not wait for its
	// watermark) or active again (false). In order like Watermark.
	WatermarkStatus
	// Values from here on are reserved for future events.
)

// NoTimestamp is the timestamp of a record without event time
// (Batch.Times, Writer.EmitTimed). It is the smallest int64, so no real
// timestamp in milliseconds collides with it.
const NoTimestamp int64 = math.MinInt64

// String names the kind as used in logs and test output.
func (k Kind) String() string {
	switch k {
	case Data:
		return "data"
	case Barrier:
		return "barrier"
	case CancelBarrier:
		return "cancel"
	case EndOfPartition:
		return "eop"
	case EndOfData:
		return "eod"
	case Announcement:
		return "announce"
	case Watermark:
		return "watermark"
	case WatermarkStatus:
		return "wm-status"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// IsEvent reports whether buffers of this kind are events, which travel in
// order with data but take no credit.
func (k Kind) IsEvent() bool { return k != Data }

// Buffer is the unit a channel carries: a batch of records or one event.
type Buffer struct {
	Kind Kind
	// Priority is set by Gate.Poll and Gate.PollPriority on a buffer served
	// from the gate's priority section: it overtook the channel's queued
	// data and ordinary events. Senders leave it false.
	Priority bool
	// Seq is the buffer's position in its channel, stamped by the sender: a
	// Data buffer gets the number of Data buffers sent on the channel so far,
	// itself included (the first is 1); an event gets the Seq of the last
	// Data buffer before it (0 if none). A priority barrier with Seq s
	// therefore overtook exactly the queued Data buffers with Seq <= s.
	Seq uint64
	// Data is a *Batch[T] for Data buffers. It is stored as a pointer, so
	// putting it into the interface does not allocate. The receiver owns the
	// batch once it polled it and must Recycle it when done.
	Data any
	// Barrier is set for Barrier buffers.
	Barrier checkpoint.Barrier
	// Cancel is the checkpoint whose alignment a CancelBarrier aborts.
	Cancel checkpoint.ID
	// Watermark is set for Watermark buffers: the event time in
	// milliseconds up to which the producer's output is complete.
	Watermark int64
	// Idle is set for WatermarkStatus buffers: true when the producer's
	// output became idle, false when it is active again.
	Idle bool
	// LogBuffers and LogRecords are set in WEAKLY_CONSISTENT mode: the
	// position in the producer's in-flight log after this buffer (its
	// entry's index, the records logged up to it). A consumer's snapshot
	// stores them, and they count entries the consumer never got (dropped
	// from the log before it read them), which its own count would not.
	LogBuffers, LogRecords uint64
}
