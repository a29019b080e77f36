package weir

import "time"

// BadRecord is a record a source read but could not turn into its record
// type: the raw bytes, where the source read them and why they were
// rejected. Connectors send bad records to a side output of the source
// when asked to (kafka.WithBadRecordsTo, nats.WithBadRecordsTo), so a job
// can sink them (a dead-letter topic, a file) or process them like any
// stream.
type BadRecord struct {
	// Source is the uid of the source operator, and Subtask its instance.
	Source  string
	Subtask int
	// Topic is the Kafka topic, or the NATS stream.
	Topic string
	// Partition is the Kafka partition; 0 for NATS.
	Partition int32
	// Offset is the Kafka offset, or the NATS stream sequence.
	Offset int64
	// Subject is the NATS subject; "" for Kafka.
	Subject string
	// Key is the Kafka record key; nil for NATS.
	Key []byte
	// Value is the record's payload as read.
	Value []byte
	// Time is the record's timestamp (Kafka) or the time the stream
	// stored the message (NATS).
	Time time.Time
	// Err is the deserializer's error text.
	Err string
}

// CollectSourceSide emits v into the side output tag of the source whose
// RuntimeContext is rc (the one Source.Open got). Call it from Read: the
// engine pushes v after the records that Read returns and before the next
// checkpoint barrier, so the position the source snapshots after that
// Read covers v, and a restore from that checkpoint does not emit it
// again — v is emitted once per failure-free run, like the main output.
// The source's stream is read with SideOutput(stream, tag); its records
// carry no event timestamp, even from FromSourceWithWatermarks (assign
// them downstream if event time matters). If the job does not read tag
// (SideOutputConnected), or rc is not a source's, v is dropped.
func CollectSourceSide[T any](rc *RuntimeContext, tag OutputTag[T], v T) {
	if rc == nil || rc.sides == nil {
		return
	}
	if sc, ok := rc.sides.get(tag.id).(*sideCollector[T]); ok {
		sc.buf = append(sc.buf, v)
	}
}

// SideOutputConnected reports whether the job reads the side output tag
// of the source whose RuntimeContext is rc, with records of type T. A
// source that sends records there only when asked (bad records) calls it
// in Open and refuses to start without a reader, so that nothing it
// routes there is lost silently.
func SideOutputConnected[T any](rc *RuntimeContext, tag OutputTag[T]) bool {
	if rc == nil || rc.sides == nil {
		return false
	}
	_, ok := rc.sides.get(tag.id).(*sideCollector[T])
	return ok
}
