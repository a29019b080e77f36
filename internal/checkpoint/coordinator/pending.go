package coordinator

import (
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
)

// pending is a triggered checkpoint that has neither completed nor been
// aborted. Once every task acked, it is persisting: its metadata is being
// written and only a Persisted event may end it. A persisting checkpoint that
// outlived a Reset is orphaned: it belongs to an execution attempt that no
// longer runs, so its failure is not held against the new one.
type pending struct {
	id         checkpoint.ID
	kind       checkpoint.Kind
	ts         time.Time
	acks       map[checkpoint.TaskID]checkpoint.TaskState
	persisting bool
	orphaned   bool
}

// ack records one task's acknowledgement and reports whether it was new.
func (p *pending) ack(task checkpoint.TaskID, st checkpoint.TaskState) bool {
	if _, dup := p.acks[task]; dup {
		return false
	}
	p.acks[task] = st
	return true
}

// states lists the acknowledged states in the order of tasks.
func (p *pending) states(tasks []checkpoint.TaskID) []checkpoint.TaskState {
	out := make([]checkpoint.TaskState, 0, len(tasks))
	for _, t := range tasks {
		out = append(out, p.acks[t])
	}
	return out
}
