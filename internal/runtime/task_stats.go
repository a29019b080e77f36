package runtime

import (
	"math"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
)

// This file measures a task's part of a checkpoint for monitoring (the
// acknowledgement's checkpoint.SubtaskMetrics): when the first barrier
// arrived, how long alignment lasted, and how much in-flight data it held
// back or persisted. Everything here runs on the task goroutine, once per
// barrier or snapshot, never per batch.

// alignStats follows the newest checkpoint whose barrier reached the task.
type alignStats struct {
	id        checkpoint.ID
	firstAt   time.Time // first barrier (or announcement) of id
	recordsAt int64     // RecordsIn at firstAt
	// pending is the metrics of an unaligned snapshot of id, completed
	// when its recording ends (alignmentDone) and read by the
	// asynchronous goroutine only after the recorder's result.
	pending *checkpoint.SubtaskMetrics

	// reused buffers for sampling blocked channels
	queued  []any
	scratch []byte
}

// noteBarrier starts the clock of checkpoint id at its first barrier or
// announcement. Older and repeated ids change nothing.
func (t *Task) noteBarrier(id checkpoint.ID) {
	if id <= t.align.id {
		return
	}
	t.align.id, t.align.firstAt, t.align.recordsAt = id, t.now(), t.metrics.RecordsIn.Load()
	t.align.pending = nil
}

// snapshotMetrics measures checkpoint b at the task's snapshot. An aligned
// snapshot is measured completely here: alignment ends with it, and the
// channels it blocked still hold what they queued meanwhile. An unaligned
// snapshot is completed by alignmentDone once the last barrier arrived.
func (t *Task) snapshotMetrics(b checkpoint.Barrier, unaligned bool) *checkpoint.SubtaskMetrics {
	m := &checkpoint.SubtaskMetrics{Unaligned: unaligned}
	if t.gate == nil {
		return m // a source: its barrier starts here
	}
	now := t.now()
	if t.align.id != b.ID {
		// (Defensive: the handler snapshots only after a barrier or an
		// announcement of b, which noteBarrier saw.)
		t.noteBarrier(b.ID)
	}
	m.StartDelayNanos = max(0, int64(t.align.firstAt.Sub(b.Timestamp)))
	if unaligned {
		t.align.pending = m
		return m
	}
	m.AlignmentNanos = int64(now.Sub(t.align.firstAt))
	t.metrics.LastAlignmentNanos.Store(m.AlignmentNanos)
	bytes, records := t.sampleBlocked()
	m.AlignmentBufferedBytes = bytes
	m.ProcessedBytes = estimateBytes(t.metrics.RecordsIn.Load()-t.align.recordsAt, bytes, records)
	return m
}

// alignmentDone completes the metrics of the unaligned snapshot whose
// recording rec ends now: every channel delivered its barrier. It runs
// before rec.finish, which publishes the metrics to the asynchronous
// goroutine.
func (t *Task) alignmentDone(rec *channelRecorder) {
	m := t.align.pending
	if m == nil || t.align.id != rec.id {
		return
	}
	t.align.pending = nil
	m.AlignmentNanos = int64(t.now().Sub(t.align.firstAt))
	t.metrics.LastAlignmentNanos.Store(m.AlignmentNanos)
	var records int64
	for _, n := range rec.records {
		records += n
	}
	m.ProcessedBytes = estimateBytes(t.metrics.RecordsIn.Load()-t.align.recordsAt, rec.bytes, records)
}

// sampleBlocked returns the encoded size and the record count of the data
// queued in the gate's blocked channels: what alignment held back. It
// encodes at most credits + overdraft batches per channel (the gate's
// bound), once per checkpoint. Without codecs (a record type that cannot
// be encoded, in aligned mode) it reports nothing.
func (t *Task) sampleBlocked() (bytes, records int64) {
	if len(t.ua.chans) == 0 {
		return 0, 0
	}
	for ch, c := range t.gate.Stats().Channels {
		if !c.Blocked || c.QueuedData == 0 || ch >= len(t.ua.chans) {
			continue
		}
		codec := t.ua.chans[ch].codec
		t.align.queued = t.gate.AppendOvertaken(t.align.queued[:0], ch, math.MaxUint64)
		for _, d := range t.align.queued {
			t.align.scratch = codec.AppendBatch(t.align.scratch[:0], d)
			bytes += int64(len(t.align.scratch))
			records += int64(codec.Records(d))
		}
		clear(t.align.queued) // the batches stay the gate's
	}
	return bytes, records
}

// estimateBytes scales a record count by the mean encoded record size of
// a sample (sampleBytes over sampleRecords); 0 without a sample.
func estimateBytes(records, sampleBytes, sampleRecords int64) int64 {
	if records <= 0 || sampleRecords <= 0 {
		return 0
	}
	return int64(float64(records) * float64(sampleBytes) / float64(sampleRecords))
}

// restored reports the task's restore time, measured from start, if any
// of its operators restored state (jobstatus.Recorder.RestoreDone: the
// attempt's restore time is its slowest subtask's).
func (t *Task) restored(start time.Time) {
	if t.metrics == nil || t.metrics.job == nil {
		return
	}
	for _, oc := range t.chain.ocs {
		if oc.Restored != nil {
			t.metrics.job.RestoreDone(oc.Attempt, t.now().Sub(start))
			return
		}
	}
}
