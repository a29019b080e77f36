package runtime

import (
	"github.com/weirstream/weir/internal/dataflow"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/network"
)

// TaskMetrics are a task's counters. Written by the task goroutine with
// atomics (once per batch), read by reporters.
type TaskMetrics struct {
	RecordsIn        atomic.Int64
	RecordsOut       atomic.Int64
	LastSyncSnapshot atomic.Int64 // nanoseconds
	job              *jobstatus.Recorder
	// gates of the task's consumers, whose channels record when this
	// task's sends waited for credit.
	backpressure func() uint64
	// debtWaits counts the times the task waited for its output debt
	// (overdraft) to be repaid: backpressure that no send blocked on.
	debtWaits atomic.Uint64
	lastWaits atomic.Uint64
	// LastAlignmentNanos is the alignment time of the task's latest
	// snapshot: first barrier to last (Flink's checkpointAlignmentTime).
	LastAlignmentNanos atomic.Int64
	// credits sums the credits the task's output channels hold now.
	credits func() int
	// InputWatermark is the task's input watermark, the minimum over its
	// active input channels (Flink's currentInputWatermark);
	// OutputWatermark the last watermark it sent (currentOutputWatermark).
	// Both are watermark.MinWatermark before the first.
	InputWatermark  atomic.Int64
	OutputWatermark atomic.Int64
	// LateRecordsDropped counts the records the task's window operators
	// found late beyond their allowed lateness (numLateRecordsDropped).
	LateRecordsDropped atomic.Int64
	// Gauges are what the task's operators publish (dataflow.GaugeSetter).
	Gauges jobstatus.Gauges
	// Async counts the calls of the chain's async I/O operators.
	Async dataflow.AsyncMetrics
	// busy splits the task's time into busy, idle and backpressured.
	busy busyClock
}

// watchSenders makes the task's backpressure and credits the sums of its
// output channels'.
func (m *TaskMetrics) watchSenders(sent []network.Sender) {
	m.backpressure = func() uint64 {
		var waits uint64
		for _, c := range sent {
			waits += c.BackpressureWaits()
		}
		return waits
	}
	m.busy.senders = func() time.Duration {
		var d time.Duration
		for _, c := range sent {
			d += c.BackpressureTime()
		}
		return d
	}
	m.credits = func() int {
		n := 0
		for _, c := range sent {
			if r, ok := c.(network.CreditReporter); ok {
				n += r.AvailableCredits()
			}
		}
		return n
	}
}

// creditsAvailable returns the credits of the task's outputs (0 without
// outputs).
func (m *TaskMetrics) creditsAvailable() int {
	if m.credits == nil {
		return 0
	}
	return m.credits()
}

// sampleBackPressure reports whether the task waited for credit since the
// previous sample.
func (m *TaskMetrics) sampleBackPressure() bool {
	w := m.debtWaits.Load()
	if m.backpressure != nil {
		w += m.backpressure()
	}
	return m.lastWaits.Swap(w) != w
}

func (m *TaskMetrics) recordsIn(n int) {
	m.RecordsIn.Add(int64(n))
}

// sourceRecords counts records a source emitted (RecordsOut counts what
// the task's writers send, for every task).
func (m *TaskMetrics) sourceRecords(n int) {
	if m.job != nil {
		m.job.SourceRecords.Add(int64(n))
	}
}

func (m *TaskMetrics) syncSnapshot(d time.Duration) { m.LastSyncSnapshot.Store(int64(d)) }
