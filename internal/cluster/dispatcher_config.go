package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc"

	"github.com/weirstream/weir/internal/cluster/pb"
)

// Defaults of the cluster's timing, named after Flink's configuration keys
// (heartbeat.interval, heartbeat.timeout,
// taskmanager.registration.timeout).
const (
	DefaultHeartbeatInterval   = 10 * time.Second
	DefaultHeartbeatTimeout    = 50 * time.Second
	DefaultRegistrationTimeout = 5 * time.Minute
)

// JobService serves the client RPCs of the JobManager service (weir run,
// list, cancel, checkpoints). The JobMaster layer implements it; the
// Dispatcher only routes to it.
type JobService interface {
	Submit(context.Context, *pb.SubmitRequest) (*pb.SubmitResponse, error)
	Wait(*pb.WaitRequest, grpc.ServerStreamingServer[pb.JobUpdate]) error
	List(context.Context, *pb.ListRequest) (*pb.ListResponse, error)
	Cancel(context.Context, *pb.CancelRequest) (*pb.CancelResponse, error)
	Checkpoints(context.Context, *pb.CheckpointsRequest) (*pb.CheckpointsResponse, error)
}

// DispatcherConfig configures a Dispatcher. The zero value of every field
// but BuildID means its default.
type DispatcherConfig struct {
	// BuildID is this JobManager's build (ExecutableBuildID in a process,
	// anything in tests). A TaskManager of another build is refused.
	BuildID string
	// HeartbeatInterval is how often the JobManager asks every
	// TaskManager for a heartbeat (heartbeat.interval, 10s).
	HeartbeatInterval time.Duration
	// HeartbeatTimeout is the silence after which a TaskManager is lost
	// (heartbeat.timeout, 50s). TaskManagers use the same value, sent in
	// Registered.
	HeartbeatTimeout time.Duration
	// QueueLimit bounds each session's outbound queue (DefaultQueueLimit).
	QueueLimit int
	// Now is the clock the heartbeat Monitor reads (time.Now when nil).
	// Timers run on real time, so an injected clock must advance with it.
	Now func() time.Time
	// Logger receives registrations and losses (nil: silent).
	Logger *slog.Logger
	// Jobs serves the client RPCs; nil answers them with Unimplemented.
	Jobs JobService
	// FencingToken is the leader term this Dispatcher serves under high
	// availability (0 without): it goes into Registered and every message
	// to a TaskManager, which drops the messages of older terms.
	FencingToken uint64
	// TLS, if set, serves the RPC with mutual TLS
	// (security.ssl.internal.*): peers without a certificate its CA
	// signed are refused and logged with the key to set.
	TLS *TLS

	// The callbacks below are the JobMaster layer's view of TaskManagers.
	// For one TaskManager session they are called in the order
	// Registered, Message..., Lost, each at most once but Message, and
	// never concurrently with each other; callbacks of different sessions
	// may run concurrently. A returning TaskManager's new session is
	// registered only after the old one's Lost returned. Callbacks must
	// not block: hand the work to a loop. Nil callbacks are skipped.

	// OnTaskManagerRegistered is called once a TaskManager's slots are in
	// the pool and before any of its messages is delivered.
	OnTaskManagerRegistered func(tm *TaskManager)
	// OnTaskManagerMessage delivers a gateway message (everything but
	// Register and Heartbeat) from a TaskManager, in stream order.
	OnTaskManagerMessage func(tm *TaskManager, msg *pb.TaskManagerMessage)
	// OnWeakReports is called with a heartbeat's figures of
	// WEAKLY_CONSISTENT jobs, in stream order.
	OnWeakReports func(tm *TaskManager, reports []*pb.WeakJobReport)
	// OnTaskManagerLost is called once a session ended: its stream broke,
	// its heartbeats stopped, its queue overflowed, it registered anew or
	// the Dispatcher stopped. Its slots have left the pool; slots lists the
	// jobs' logical slots that were placed on it, to be redeployed.
	OnTaskManagerLost func(tm *TaskManager, reason error, slots []JobSlots)
}

// withDefaults returns c with defaults filled in.
func (c DispatcherConfig) withDefaults() DispatcherConfig {
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if c.QueueLimit == 0 {
		c.QueueLimit = DefaultQueueLimit
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate checks the configuration after defaults.
func (c DispatcherConfig) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.BuildID == "" {
		errs = append(errs, errors.New("dispatcher: no BuildID: set it to ExecutableBuildID()"))
	}
	if c.HeartbeatInterval < 0 || c.HeartbeatTimeout < 0 {
		errs = append(errs, fmt.Errorf("dispatcher: heartbeat.interval %s and heartbeat.timeout %s must be positive", c.HeartbeatInterval, c.HeartbeatTimeout))
	} else if c.HeartbeatTimeout <= c.HeartbeatInterval {
		errs = append(errs, fmt.Errorf("dispatcher: heartbeat.timeout %s must exceed heartbeat.interval %s, or every TaskManager looks lost between two heartbeats", c.HeartbeatTimeout, c.HeartbeatInterval))
	}
	if c.QueueLimit < 0 {
		errs = append(errs, fmt.Errorf("dispatcher: QueueLimit %d must be positive", c.QueueLimit))
	}
	return errors.Join(errs...)
}
