package network

import (
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
	// Values from here on are reserved for future events (watermarks).
)

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
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// IsEvent reports whether buffers of this kind are events, which travel in
// order with data but take no credit.
func (k Kind) IsEvent() bool { return k != Data }

// Buffer is the unit a channel carries: a batch of records or one event.
type Buffer struct {
	Kind Kind
	// Data is a *Batch[T] for Data buffers. It is stored as a pointer, so
	// putting it into the interface does not allocate. The receiver owns the
	// batch once it polled it and must Recycle it when done.
	Data any
	// Barrier is set for Barrier buffers.
	Barrier checkpoint.Barrier
	// Cancel is the checkpoint whose alignment a CancelBarrier aborts.
	Cancel checkpoint.ID
}
