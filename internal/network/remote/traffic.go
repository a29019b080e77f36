package remote

import "sync/atomic"

// Traffic counts the record data a ConnManager's connections carried, over
// the process's life and every job: Data frames written to peers and
// Data frames delivered to this side's channels, their encoded record
// bytes (the frames' payloads, as OutStats.SentBytes counts them, without
// headers, events or credits) and their records. It outlives the channels
// and tasks that moved the data, so a TaskManager can report what a job
// sent after the job is gone (Flink's numBytesOutRemote and
// numBytesInRemote, summed over tasks). One atomic add per buffer, not per
// record.
type Traffic struct {
	buffersSent, bytesSent, recordsSent             atomic.Uint64
	buffersReceived, bytesReceived, recordsReceived atomic.Uint64
}

// TrafficStats is a snapshot of Traffic.
type TrafficStats struct {
	BuffersSent, BytesSent, RecordsSent             uint64
	BuffersReceived, BytesReceived, RecordsReceived uint64
}

func (t *Traffic) sent(bytes, records int) {
	t.buffersSent.Add(1)
	t.bytesSent.Add(uint64(bytes))
	t.recordsSent.Add(uint64(records))
}

func (t *Traffic) received(bytes, records int) {
	t.buffersReceived.Add(1)
	t.bytesReceived.Add(uint64(bytes))
	t.recordsReceived.Add(uint64(records))
}

// Stats returns the counts so far. The fields are read one by one, so a
// snapshot taken while data moves may be a buffer apart between them.
func (t *Traffic) Stats() TrafficStats {
	return TrafficStats{
		BuffersSent: t.buffersSent.Load(), BytesSent: t.bytesSent.Load(), RecordsSent: t.recordsSent.Load(),
		BuffersReceived: t.buffersReceived.Load(), BytesReceived: t.bytesReceived.Load(), RecordsReceived: t.recordsReceived.Load(),
	}
}
