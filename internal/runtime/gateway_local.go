package runtime

import (
	"sync"

	"github.com/weirstream/weir/internal/checkpoint"
)

// Local mode's gateways. The TaskManagerGateway is the TaskExecutor itself
// (its methods are direct calls that only queue work); the
// JobMasterGateway is localJobMaster, which puts each message into the
// JobMaster's inbox. Cluster mode puts the control-plane stream behind the
// same two interfaces.

var _ TaskManagerGateway = (*TaskExecutor)(nil)

// inbox is the JobMaster's unbounded queue of events: from tasks through
// the JobMasterGateway, and from its own metadata writers. Sending never
// blocks, so no task, snapshot goroutine or TaskExecutor call can stall
// behind a busy JobMaster, and the JobMaster can call the TaskExecutor
// (which may report at once) from its loop without a deadlock. It stays
// small: events come at checkpoint and failure rate.
type inbox struct {
	mu    sync.Mutex
	queue []jmEvent
	// ready holds a signal while the queue may be non-empty; the
	// JobMaster takes everything after each signal.
	ready chan struct{}
}

func newInbox() *inbox { return &inbox{ready: make(chan struct{}, 1)} }

func (b *inbox) put(e jmEvent) {
	b.mu.Lock()
	b.queue = append(b.queue, e)
	b.mu.Unlock()
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

// take moves every queued event into dst, in the order they were put.
func (b *inbox) take(dst []jmEvent) []jmEvent {
	b.mu.Lock()
	dst = append(dst, b.queue...)
	clear(b.queue)
	b.queue = b.queue[:0]
	b.mu.Unlock()
	return dst
}

// localJobMaster is the JobMasterGateway of local mode: messages for its
// job go into the JobMaster's inbox; messages for another job (there is
// none in local mode) are dropped.
type localJobMaster struct {
	job string
	in  *inbox
}

func (g *localJobMaster) put(job string, e jmEvent) {
	if job == g.job {
		g.in.put(e)
	}
}

func (g *localJobMaster) JobPrepared(job string, err error) {
	g.put(job, jmEvent{kind: evPrepared, err: err})
}

func (g *localJobMaster) TaskStateChanged(job string, exec ExecutionID, st ExecState, err error) {
	g.put(job, jmEvent{kind: evState, exec: exec, state: st, err: err})
}

func (g *localJobMaster) Acknowledge(job string, exec ExecutionID, id checkpoint.ID, st checkpoint.TaskState) {
	g.put(job, jmEvent{kind: evAck, exec: exec, id: id, taskState: st})
}

func (g *localJobMaster) Decline(job string, exec ExecutionID, id checkpoint.ID, reason string) {
	g.put(job, jmEvent{kind: evDecline, exec: exec, id: id, reason: reason})
}

func (g *localJobMaster) EndOfData(job string, exec ExecutionID) {
	g.put(job, jmEvent{kind: evEndOfData, exec: exec})
}
