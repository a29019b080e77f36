package cluster

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/cluster/pb"
)

// Causes of a lost TaskManager, wrapped in the reason OnTaskManagerLost
// receives, for callers that tell them apart with errors.Is.
var (
	// ErrHeartbeatTimeout: the peer stayed connected but silent for
	// heartbeat.timeout.
	ErrHeartbeatTimeout = errors.New("heartbeat timeout")
	// ErrStreamClosed: the session's stream broke or the peer closed it
	// (a killed process closes its sockets).
	ErrStreamClosed = errors.New("stream closed")
	// ErrReplaced: the TaskManager registered again on a new stream, so
	// the JobManager ends the old session first.
	ErrReplaced = errors.New("registered again")
	// ErrDispatcherStopped: the JobManager is shutting down.
	ErrDispatcherStopped = errors.New("JobManager stopping")
)

// TaskManager is the JobManager's side of one TaskManager session: what
// the TaskManager registered with and the queue of messages to it. A
// TaskManager that reconnects gets a new *TaskManager with a new Session;
// its ID stays.
type TaskManager struct {
	// ID is the TaskManager's ResourceID.
	ID string
	// Session is unique per registration.
	Session string
	// Addr is the peer address of its stream, for messages.
	Addr string
	// Slots, DataAddress, MetricsAddress and AppFingerprint are as sent
	// in Register.
	Slots          int
	DataAddress    string
	MetricsAddress string
	AppFingerprint []byte
	// Registered is when the session started.
	Registered time.Time

	out      *outbox[*pb.JobManagerMessage]
	finished chan struct{} // closed after OnTaskManagerLost returned

	// mu orders message delivery against loss: the reader delivers under
	// it and the session's end sets closed under it, so no message is
	// delivered once OnTaskManagerLost may run.
	mu     sync.Mutex
	closed bool

	reports atomic.Pointer[[]*pb.TaskReport]
}

// String renders "tm-3 (127.0.0.1:41234)".
func (tm *TaskManager) String() string { return fmt.Sprintf("%s (%s)", tm.ID, tm.Addr) }

// Send queues a message to the TaskManager and returns at once. Messages
// go out in the order Send was called. It fails with ErrSessionClosed once
// the session has ended; a queue past its limit ends the session
// (ErrQueueOverflow) and this call fails too. Send never blocks, so a
// JobMaster loop may call it.
func (tm *TaskManager) Send(m *pb.JobManagerMessage) error {
	if err := tm.out.push(m); err != nil {
		return fmt.Errorf("send to TaskManager %s: %w", tm, err)
	}
	return nil
}

// Done is closed when the session has ended (before OnTaskManagerLost
// is called).
func (tm *TaskManager) Done() <-chan struct{} { return tm.out.done }

// Reports returns the task reports of the TaskManager's latest heartbeat
// (nil before the first). The slice must not be modified.
func (tm *TaskManager) Reports() []*pb.TaskReport {
	if p := tm.reports.Load(); p != nil {
		return *p
	}
	return nil
}

// deliver hands a gateway message to f unless the session has ended.
func (tm *TaskManager) deliver(f func(*TaskManager, *pb.TaskManagerMessage), m *pb.TaskManagerMessage) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if !tm.closed && f != nil {
		f(tm, m)
	}
}

// seal stops deliveries; it waits for one in progress.
func (tm *TaskManager) seal() {
	tm.mu.Lock()
	tm.closed = true
	tm.mu.Unlock()
}
