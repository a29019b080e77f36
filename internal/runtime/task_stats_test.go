package runtime

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/network"
)

// int64Codec encodes batches of int64 as a uvarint count and 8 bytes per
// record, so encoded sizes are easy to predict.
type int64Codec struct{}

func (int64Codec) AppendBatch(dst []byte, data any) []byte {
	recs := data.(*network.Batch[int64]).Records
	dst = binary.AppendUvarint(dst, uint64(len(recs)))
	for _, r := range recs {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(r))
	}
	return dst
}

func (int64Codec) DecodeBatch([]byte) (any, int, error) { panic("not used") }
func (int64Codec) KeepKeyGroups(any, any, int, func(int) bool) (any, int, error) {
	panic("not used")
}
func (int64Codec) Records(data any) int { return len(data.(*network.Batch[int64]).Records) }
func (int64Codec) Schema() []byte       { return testSchema[int64]() }

// statsTask is a task with a gate of n channels and an int64 codec on
// each, enough to take its snapshot measurements.
func statsTask(n int, now *time.Time) *Task {
	t := &Task{gate: network.NewGate(n, 8), metrics: &TaskMetrics{}, rec: barrierRecovery{}, now: func() time.Time { return *now }}
	for range n {
		t.ua.chans = append(t.ua.chans, channelInfo{codec: int64Codec{}})
	}
	return t
}

func sendBatch(t *testing.T, g *network.Gate, ch int, recs ...int64) {
	t.Helper()
	pool := network.NewPool[int64](len(recs))
	b := pool.Get()
	b.Records = append(b.Records, recs...)
	if err := g.Channel(ch).Send(context.Background(), network.Buffer{Kind: network.Data, Data: b}); err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotMetricsAligned checks an aligned snapshot's measurements:
// start delay from the trigger to the first barrier, alignment from the
// first barrier to the snapshot, and exactly the encoded bytes queued on
// blocked channels (not on the unblocked one).
func TestSnapshotMetricsAligned(t *testing.T) {
	t0 := time.Unix(1000, 0)
	now := t0
	task := statsTask(3, &now)
	sendBatch(t, task.gate, 0, 1, 2, 3) // 1 + 3*8 bytes
	sendBatch(t, task.gate, 0, 4)       // 1 + 8
	sendBatch(t, task.gate, 1, 5, 6)    // queued but channel 1 is not blocked
	sendBatch(t, task.gate, 2, 7, 8)    // 1 + 16, blocked
	task.gate.Block(0)
	task.gate.Block(2)

	now = t0.Add(300 * time.Millisecond)
	task.noteBarrier(7)
	task.metrics.RecordsIn.Add(10) // processed during alignment
	now = t0.Add(500 * time.Millisecond)
	task.noteBarrier(7) // a later barrier of the same checkpoint changes nothing
	now = t0.Add(1200 * time.Millisecond)
	m := task.snapshotMetrics(checkpoint.Barrier{ID: 7, Timestamp: t0}, false)

	want := checkpoint.SubtaskMetrics{
		StartDelayNanos:        int64(300 * time.Millisecond),
		AlignmentNanos:         int64(900 * time.Millisecond),
		AlignmentBufferedBytes: 25 + 9 + 17,
		// 10 records at the sample's mean size, 51 bytes / 6 records
		ProcessedBytes: 85,
	}
	if *m != want {
		t.Errorf("metrics = %+v, want %+v", *m, want)
	}
	// Sampling left the queues as they were.
	for ch, want := range []int{2, 1, 1} {
		if got := task.gate.Stats().Channels[ch].QueuedData; got != want {
			t.Errorf("channel %d holds %d batches after sampling, want %d", ch, got, want)
		}
	}
}

// TestSnapshotMetricsUnaligned checks that an unaligned snapshot's
// alignment runs until its recording ends, with the processed bytes
// estimated from the recorded data.
func TestSnapshotMetricsUnaligned(t *testing.T) {
	t0 := time.Unix(1000, 0)
	now := t0
	task := statsTask(2, &now)
	sendBatch(t, task.gate, 0, 1, 2) // blocked data is not sampled unaligned
	task.gate.Block(0)
	now = t0.Add(50 * time.Millisecond)
	task.noteBarrier(3)
	m := task.snapshotMetrics(checkpoint.Barrier{ID: 3, Timestamp: t0}, true)
	if m.AlignmentNanos != 0 || m.AlignmentBufferedBytes != 0 || !m.Unaligned {
		t.Fatalf("unaligned metrics at the snapshot = %+v, want only Unaligned and the start delay", *m)
	}
	task.metrics.RecordsIn.Add(4)
	now = t0.Add(250 * time.Millisecond)
	task.alignmentDone(&channelRecorder{id: 2, records: []int64{8}, bytes: 80}) // another checkpoint's
	if m.AlignmentNanos != 0 {
		t.Fatalf("a recorder of checkpoint 2 completed checkpoint 3's metrics: %+v", *m)
	}
	task.alignmentDone(&channelRecorder{id: 3, records: []int64{6, 2}, bytes: 80})
	want := checkpoint.SubtaskMetrics{
		StartDelayNanos: int64(50 * time.Millisecond),
		AlignmentNanos:  int64(200 * time.Millisecond),
		ProcessedBytes:  40,
		Unaligned:       true,
	}
	if *m != want {
		t.Errorf("metrics = %+v, want %+v", *m, want)
	}
}

// TestSnapshotMetricsSource: a source's barrier starts at the source, so
// it reports no delay or alignment.
func TestSnapshotMetricsSource(t *testing.T) {
	now := time.Unix(1000, 0)
	task := &Task{metrics: &TaskMetrics{}, rec: barrierRecovery{}, now: func() time.Time { return now }}
	m := task.snapshotMetrics(checkpoint.Barrier{ID: 1, Timestamp: now.Add(-time.Second)}, false)
	if *m != (checkpoint.SubtaskMetrics{}) {
		t.Errorf("source metrics = %+v, want zero", *m)
	}
}

// A task reports its restore time only when one of its operators restored
// state.
func TestTaskRestoredReportsOnlyRestores(t *testing.T) {
	var s jobstatus.JobStatus
	rec := jobstatus.RecorderOf(&s)
	rec.Restoring(3, 0, time.Unix(0, 0))
	now := time.Unix(10, 0)
	task := func(restored *dataflow.RestoredState) *Task {
		return &Task{metrics: &TaskMetrics{job: rec}, rec: barrierRecovery{}, now: func() time.Time { return now },
			chain: chain{ocs: []*dataflow.OperatorContext{{}, {Restored: restored}}}}
	}
	task(nil).restored(now.Add(-time.Second))
	if d := s.LastRestoreDuration.Load(); d != 0 {
		t.Fatalf("a task without restored state reported %v", time.Duration(d))
	}
	task(&dataflow.RestoredState{Checkpoint: 3}).restored(now.Add(-40 * time.Millisecond))
	if d := time.Duration(s.LastRestoreDuration.Load()); d != 40*time.Millisecond {
		t.Fatalf("restored task reported %v, want 40ms", d)
	}
}

func TestEstimateBytes(t *testing.T) {
	for _, c := range []struct{ records, bytes, sample, want int64 }{
		{10, 50, 5, 100},
		{0, 50, 5, 0},
		{10, 0, 0, 0}, // no sample
		{3, 10, 4, 7}, // rounds down
	} {
		if got := estimateBytes(c.records, c.bytes, c.sample); got != c.want {
			t.Errorf("estimateBytes(%d, %d, %d) = %d, want %d", c.records, c.bytes, c.sample, got, c.want)
		}
	}
}
