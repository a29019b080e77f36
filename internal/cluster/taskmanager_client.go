package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/heartbeat"
)

// ErrRejected marks a registration the JobManager refused; the
// TaskManager must exit with the reason (it is not retried).
var ErrRejected = errors.New("registration rejected")

// ErrJobManagerUnreachable marks a TaskManager that could not register
// within taskmanager.registration.timeout.
var ErrJobManagerUnreachable = errors.New("JobManager unreachable")

// Re-registration backoff (docs/design/cluster.md, section 5).
const (
	DefaultMinBackoff = 100 * time.Millisecond
	DefaultMaxBackoff = 5 * time.Second
)

// registerTimeout bounds one registration attempt: dialling, Register and
// the answer.
const registerTimeout = 10 * time.Second

// TaskManagerHandler receives what the JobManager sends a TaskManager: the
// TaskExecutor implements it. Calls come from one goroutine per session,
// in stream order, and must not block (queue the work into task
// mailboxes); answers go out through the session's Send. Embed
// NopTaskManagerHandler to implement only some methods.
type TaskManagerHandler interface {
	// Registered is called when a session started, before its messages.
	Registered(s *JobManagerSession)
	// Disconnected is called when the session ended (the JobManager is
	// lost, rejected nothing here: that ends Run). The handler must cancel
	// the session's tasks and return once they ended, so that no task
	// outlives its session; only then does the TaskManager register anew.
	Disconnected(s *JobManagerSession, reason error)
	// Reports returns the execution reports a Heartbeat carries.
	Reports() []*pb.TaskReport

	PrepareJob(s *JobManagerSession, m *pb.PrepareJob)
	ReleaseJob(s *JobManagerSession, m *pb.ReleaseJob)
	Deploy(s *JobManagerSession, m *pb.Deploy)
	Cancel(s *JobManagerSession, m *pb.CancelTasks)
	Trigger(s *JobManagerSession, m *pb.Trigger)
	NotifyComplete(s *JobManagerSession, m *pb.NotifyComplete)
	NotifyAborted(s *JobManagerSession, m *pb.NotifyAborted)
	StopSources(s *JobManagerSession, m *pb.StopSources)
}

// NopTaskManagerHandler ignores every message.
type NopTaskManagerHandler struct{}

func (NopTaskManagerHandler) Registered(*JobManagerSession)                         {}
func (NopTaskManagerHandler) Disconnected(*JobManagerSession, error)                {}
func (NopTaskManagerHandler) Reports() []*pb.TaskReport                             { return nil }
func (NopTaskManagerHandler) PrepareJob(*JobManagerSession, *pb.PrepareJob)         {}
func (NopTaskManagerHandler) ReleaseJob(*JobManagerSession, *pb.ReleaseJob)         {}
func (NopTaskManagerHandler) Deploy(*JobManagerSession, *pb.Deploy)                 {}
func (NopTaskManagerHandler) Cancel(*JobManagerSession, *pb.CancelTasks)            {}
func (NopTaskManagerHandler) Trigger(*JobManagerSession, *pb.Trigger)               {}
func (NopTaskManagerHandler) NotifyComplete(*JobManagerSession, *pb.NotifyComplete) {}
func (NopTaskManagerHandler) NotifyAborted(*JobManagerSession, *pb.NotifyAborted)   {}
func (NopTaskManagerHandler) StopSources(*JobManagerSession, *pb.StopSources)       {}

// TaskManagerConfig configures a TaskManager's connection to its
// JobManager.
type TaskManagerConfig struct {
	// JobManager is the JobManager's rpc address (--jobmanager).
	JobManager string
	// ResourceID names this TaskManager process, e.g. "tm-3f9c1a".
	ResourceID string
	// Slots is the number of task slots offered (--slots); the JobManager
	// refuses 0.
	Slots int
	// DataAddress, MetricsAddress and AppFingerprint go into Register.
	DataAddress    string
	MetricsAddress string
	AppFingerprint []byte
	// BuildID is this process's build (ExecutableBuildID).
	BuildID string
	// RegistrationTimeout is how long the TaskManager tries to register,
	// at start and after losing its JobManager, before Run fails
	// (taskmanager.registration.timeout, 5m).
	RegistrationTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait between attempts (100ms
	// doubling to 5s).
	MinBackoff, MaxBackoff time.Duration
	// QueueLimit bounds the session's outbound queue (DefaultQueueLimit).
	QueueLimit int
	// Handler receives the JobManager's messages; nil ignores them.
	Handler TaskManagerHandler
	// Now is the clock the heartbeat Monitor reads (time.Now when nil).
	Now func() time.Time
	// Logger (nil: silent).
	Logger *slog.Logger

	// protocolVersion replaces ProtocolVersion in Register, for tests of
	// the refusal.
	protocolVersion uint32
}

func (c TaskManagerConfig) withDefaults() TaskManagerConfig {
	if c.RegistrationTimeout == 0 {
		c.RegistrationTimeout = DefaultRegistrationTimeout
	}
	if c.MinBackoff == 0 {
		c.MinBackoff = DefaultMinBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.QueueLimit == 0 {
		c.QueueLimit = DefaultQueueLimit
	}
	if c.Handler == nil {
		c.Handler = NopTaskManagerHandler{}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.protocolVersion == 0 {
		c.protocolVersion = ProtocolVersion
	}
	return c
}

// Validate checks the configuration.
func (c TaskManagerConfig) Validate() error {
	var errs []error
	if c.JobManager == "" {
		errs = append(errs, errors.New("taskmanager: no JobManager address: set --jobmanager HOST:PORT"))
	}
	if c.ResourceID == "" {
		errs = append(errs, errors.New("taskmanager: no ResourceID"))
	}
	if c.RegistrationTimeout < 0 || c.MinBackoff < 0 || c.MaxBackoff < c.MinBackoff {
		errs = append(errs, fmt.Errorf("taskmanager: registration timeout %s, backoff %s to %s: want positive durations, min ≤ max", c.RegistrationTimeout, c.MinBackoff, c.MaxBackoff))
	}
	return errors.Join(errs...)
}

// JobManagerSession is the TaskManager's side of one session.
type JobManagerSession struct {
	// ID is the session id the JobManager assigned.
	ID string
	// HeartbeatInterval and HeartbeatTimeout are the JobManager's.
	HeartbeatInterval, HeartbeatTimeout time.Duration

	out *outbox[*pb.TaskManagerMessage]
}

// Send queues a message to the JobManager and returns at once; see
// TaskManager.Send.
func (s *JobManagerSession) Send(m *pb.TaskManagerMessage) error {
	if err := s.out.push(m); err != nil {
		return fmt.Errorf("send to JobManager: %w", err)
	}
	return nil
}

// Done is closed when the session has ended.
func (s *JobManagerSession) Done() <-chan struct{} { return s.out.done }

// RunTaskManager registers with the JobManager and serves sessions until
// ctx ends (nil), the JobManager rejects the registration (ErrRejected,
// with its reason) or it stays unreachable for the registration timeout
// (ErrJobManagerUnreachable). A lost JobManager (broken stream, silent for
// heartbeat.timeout) is reported to Handler.Disconnected, then the
// TaskManager registers again with backoff.
func RunTaskManager(ctx context.Context, cfg TaskManagerConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	log := cfg.Logger.With("jobmanager", cfg.JobManager, "tm", cfg.ResourceID)
	for {
		s, conn, stream, err := register(ctx, cfg, log)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		log.Info("registered", "session", s.ID)
		reason := serve(ctx, cfg, s, conn, stream)
		log.Warn("JobManager lost", "session", s.ID, "reason", reason)
		cfg.Handler.Disconnected(s, reason)
		if ctx.Err() != nil {
			return nil
		}
	}
}

// unreachableError is the error of a registration that timed out: its
// text is the message for the user, and it wraps the last attempt's error.
type unreachableError struct {
	addr    string
	timeout time.Duration
	last    error
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("JobManager at %s unreachable for %s: start it, or check --jobmanager", e.addr, shortDuration(e.timeout))
}

func (e *unreachableError) Unwrap() []error { return []error{ErrJobManagerUnreachable, e.last} }

// shortDuration renders 5m0s as "5m" and 1h0m0s as "1h".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// register tries to open a session until it succeeds, is rejected, ctx
// ends or the registration timeout passes.
func register(ctx context.Context, cfg TaskManagerConfig, log *slog.Logger) (*JobManagerSession, *grpc.ClientConn, grpc.BidiStreamingClient[pb.TaskManagerMessage, pb.JobManagerMessage], error) {
	deadline := time.Now().Add(cfg.RegistrationTimeout)
	backoff := cfg.MinBackoff
	for {
		s, conn, stream, err := attempt(ctx, cfg, deadline)
		if err == nil || errors.Is(err, ErrRejected) || ctx.Err() != nil {
			return s, conn, stream, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil, nil, &unreachableError{addr: cfg.JobManager, timeout: cfg.RegistrationTimeout, last: err}
		}
		if status.Code(err) == codes.AlreadyExists {
			// The JobManager holds another live session under this id.
			log.Warn("registration refused for now, retrying", "in", backoff, "error", err)
		} else {
			log.Debug("registration failed, retrying", "in", backoff, "error", err)
		}
		t := time.NewTimer(min(backoff, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, nil, ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, cfg.MaxBackoff)
	}
}

// attempt dials, sends Register and waits for the answer. On success the
// caller owns the connection and the stream (whose context lives until the
// connection closes).
func attempt(ctx context.Context, cfg TaskManagerConfig, deadline time.Time) (*JobManagerSession, *grpc.ClientConn, grpc.BidiStreamingClient[pb.TaskManagerMessage, pb.JobManagerMessage], error) {
	opts := append(versionClientOptions(int(cfg.protocolVersion)),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageSize), grpc.MaxCallSendMsgSize(maxMessageSize)),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: keepaliveTime, Timeout: keepaliveTime / 3, PermitWithoutStream: true}),
	)
	conn, err := grpc.NewClient("passthrough:///"+cfg.JobManager, opts...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("dial JobManager at %s: %w", cfg.JobManager, err)
	}
	// The stream's context must outlive this attempt; closing conn ends it.
	stream, err := pb.NewJobManagerClient(conn).Connect(context.WithoutCancel(ctx))
	if err != nil {
		conn.Close()
		return nil, nil, nil, err
	}
	answer := make(chan error, 1)
	var first *pb.JobManagerMessage
	go func() {
		err := stream.Send(&pb.TaskManagerMessage{Msg: &pb.TaskManagerMessage_Register{Register: &pb.Register{
			ProtocolVersion: cfg.protocolVersion,
			BuildId:         cfg.BuildID,
			ResourceId:      cfg.ResourceID,
			Slots:           uint32(max(cfg.Slots, 0)),
			DataAddress:     cfg.DataAddress,
			MetricsAddress:  cfg.MetricsAddress,
			AppFingerprint:  cfg.AppFingerprint,
		}}})
		if err == nil {
			first, err = stream.Recv()
		}
		answer <- err
	}()
	t := time.NewTimer(min(registerTimeout, max(time.Until(deadline), time.Millisecond)))
	defer t.Stop()
	answered := false
	select {
	case err = <-answer:
		answered = true
	case <-t.C:
		err = errors.New("no answer to Register")
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil {
		switch x := first.GetMsg().(type) {
		case *pb.JobManagerMessage_Registered:
			r := x.Registered
			return &JobManagerSession{
				ID:                r.GetSessionId(),
				HeartbeatInterval: time.Duration(r.GetHeartbeatIntervalMillis()) * time.Millisecond,
				HeartbeatTimeout:  time.Duration(r.GetHeartbeatTimeoutMillis()) * time.Millisecond,
				out:               newOutbox[*pb.TaskManagerMessage](cfg.QueueLimit),
			}, conn, stream, nil
		case *pb.JobManagerMessage_Rejected:
			err = fmt.Errorf("%w by JobManager at %s: %s", ErrRejected, cfg.JobManager, x.Rejected.GetReason())
		default:
			err = fmt.Errorf("JobManager at %s answered Register with %T: not a weir JobManager of this build", cfg.JobManager, first.GetMsg())
		}
	}
	conn.Close() // also ends the goroutine above if it still waits
	if !answered {
		<-answer
	}
	return nil, nil, nil, err
}

// serve runs a registered session until the JobManager is lost or ctx
// ends, and returns why it ended once its goroutines have and conn is
// closed: no handler call of the session is in progress afterwards.
func serve(ctx context.Context, cfg TaskManagerConfig, s *JobManagerSession, conn *grpc.ClientConn, stream grpc.BidiStreamingClient[pb.TaskManagerMessage, pb.JobManagerMessage]) error {
	const jm = "jobmanager"
	timeout := s.HeartbeatTimeout
	if timeout <= 0 {
		timeout = DefaultHeartbeatTimeout
	}
	var mu sync.Mutex // guards monitor, shared with the reader
	monitor := heartbeat.NewMonitor[string](timeout)
	monitor.Seen(jm, cfg.Now())
	cfg.Handler.Registered(s)

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // reader
		defer wg.Done()
		for {
			m, err := stream.Recv()
			if err != nil {
				s.out.close(fmt.Errorf("%w: %w", ErrStreamClosed, err))
				return
			}
			mu.Lock()
			monitor.Seen(jm, cfg.Now())
			mu.Unlock()
			select {
			case <-s.out.done: // lost: deliver nothing more
				return
			default:
			}
			dispatch(cfg.Handler, s, m)
		}
	}()
	go func() { // writer
		defer wg.Done()
		if err := s.out.pump(stream.Send, nil); err != nil {
			s.out.close(fmt.Errorf("%w: send: %w", ErrStreamClosed, err))
		}
	}()

	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.out.close(context.Cause(ctx))
		case <-s.out.done:
		case <-t.C:
			mu.Lock()
			now := cfg.Now()
			if len(monitor.Expired(now)) > 0 {
				s.out.close(fmt.Errorf("%w: no heartbeat request from the JobManager for %s", ErrHeartbeatTimeout, timeout))
			} else {
				at, _ := monitor.NextDeadline()
				t.Reset(at.Sub(now))
			}
			mu.Unlock()
			continue
		}
		break
	}
	conn.Close() // ends the reader's Recv
	wg.Wait()
	return s.out.cause()
}

// dispatch hands one message to the handler, answering heartbeat
// requests itself.
func dispatch(h TaskManagerHandler, s *JobManagerSession, m *pb.JobManagerMessage) {
	switch x := m.GetMsg().(type) {
	case *pb.JobManagerMessage_HeartbeatRequest:
		// A full queue closes the session; serve notices.
		_ = s.Send(&pb.TaskManagerMessage{Msg: &pb.TaskManagerMessage_Heartbeat{Heartbeat: &pb.Heartbeat{Seq: x.HeartbeatRequest.GetSeq(), Reports: h.Reports()}}})
	case *pb.JobManagerMessage_PrepareJob:
		h.PrepareJob(s, x.PrepareJob)
	case *pb.JobManagerMessage_ReleaseJob:
		h.ReleaseJob(s, x.ReleaseJob)
	case *pb.JobManagerMessage_Deploy:
		h.Deploy(s, x.Deploy)
	case *pb.JobManagerMessage_Cancel:
		h.Cancel(s, x.Cancel)
	case *pb.JobManagerMessage_Trigger:
		h.Trigger(s, x.Trigger)
	case *pb.JobManagerMessage_NotifyComplete:
		h.NotifyComplete(s, x.NotifyComplete)
	case *pb.JobManagerMessage_NotifyAborted:
		h.NotifyAborted(s, x.NotifyAborted)
	case *pb.JobManagerMessage_StopSources:
		h.StopSources(s, x.StopSources)
	default:
		// Registered or Rejected again, or a message of a newer protocol
		// version this build cannot know (versions are checked at
		// registration, so a bug on the other side): drop it.
	}
}
