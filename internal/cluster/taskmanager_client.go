package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/heartbeat"
	"github.com/weirstream/weir/internal/security"
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
	WeakPeers(s *JobManagerSession, m *pb.WeakPeers)
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
func (NopTaskManagerHandler) WeakPeers(*JobManagerSession, *pb.WeakPeers)           {}

// TaskManagerConfig configures a TaskManager's connection to its
// JobManager.
type TaskManagerConfig struct {
	// JobManager is the JobManager's rpc address (--jobmanager), or a
	// comma-separated list of the addresses of several JobManagers (high
	// availability: one leads, the others stand by), tried in order.
	JobManager string
	// Locate, if set, returns the candidate JobManagers' rpc addresses,
	// best first (under high availability: the leader recorded in etcd).
	// Each registration round calls it and tries its answer before the
	// JobManager list; an error is logged and the list is tried alone.
	Locate func(ctx context.Context) ([]string, error)
	// LeaderTerms, if set, reports the leader terms observed (under high
	// availability: in etcd). It is called once per RunTaskManager with a
	// context that ends with it. A term newer than the current session's
	// fencing token ends the session at once (ErrNewLeader): the
	// TaskManager cancels its tasks and registers with the new leader
	// instead of waiting heartbeat.timeout for the deposed one.
	LeaderTerms func(ctx context.Context) <-chan int64
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
	// TLS, if set, dials the JobManager with mutual TLS
	// (security.ssl.internal.*); nil is plain TCP. A refused handshake
	// ends the registration at once with an error naming the keys.
	TLS *TLS
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
	if addrs, err := SplitAddresses(c.JobManager); err != nil {
		errs = append(errs, fmt.Errorf("taskmanager: --jobmanager: %w", err))
	} else if len(addrs) == 0 && c.Locate == nil {
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
	// JobManager is the rpc address of the session's JobManager.
	JobManager string
	// FencingToken is the JobManager's leader term (0 without high
	// availability), from Registered; messages of an older term end the
	// session.
	FencingToken uint64
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
// heartbeat.timeout, deposed by a newer leader term) is reported to
// Handler.Disconnected, then the TaskManager registers again with backoff.
//
// With several candidate JobManagers (a list, Locate) each round tries
// them in order; a standby's NOT_LEADER rejection sends the TaskManager to
// the leader it names. The TaskManager remembers the newest leader term
// (fencing token) it has seen: a Registered of an older term is refused
// and the search goes on, a message of an older term ends the session
// (ErrStaleLeader), and a newer term from LeaderTerms ends it too
// (ErrNewLeader). Without high availability every token is 0 and none of
// this applies.
func RunTaskManager(ctx context.Context, cfg TaskManagerConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	static, _ := SplitAddresses(cfg.JobManager)
	log := cfg.Logger.With("tm", cfg.ResourceID)
	f := newFence()
	if cfg.LeaderTerms != nil {
		tctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			watchTerms(tctx, cfg.LeaderTerms(tctx), f, log)
		}()
		defer wg.Wait()
		defer cancel()
	}
	r := &registrar{cfg: cfg, static: static, fence: f, log: log}
	for {
		s, conn, stream, err := r.register(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		slog := log.With("jobmanager", s.JobManager)
		if s.FencingToken != 0 {
			slog = slog.With("term", s.FencingToken)
		}
		slog.Info("registered", "session", s.ID)
		reason := serve(ctx, cfg, s, conn, stream, f)
		slog.Warn("JobManager lost", "session", s.ID, "reason", reason)
		cfg.Handler.Disconnected(s, reason)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(reason, ErrNewLeader) || errors.Is(reason, ErrStaleLeader) {
			// The deposed leader may still answer (paused, partitioned):
			// try it last.
			r.avoid = s.JobManager
		} else {
			r.avoid = ""
		}
	}
}

// watchTerms raises the fence with every term observed until ctx ends.
func watchTerms(ctx context.Context, terms <-chan int64, f *fence, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case t, ok := <-terms:
			if !ok {
				return
			}
			if t > 0 && f.raise(uint64(t)) {
				log.Info("new leader term observed", "term", t)
			}
		}
	}
}

// unreachableError is the error of a registration that timed out: its
// text is the message for the user, and it wraps the last attempt's error.
type unreachableError struct {
	addrs   []string // every address tried
	located bool     // the candidates came from Locate too
	locErr  error    // Locate's last error, if any
	timeout time.Duration
	last    error
}

func (e *unreachableError) Error() string {
	if len(e.addrs) == 1 && !e.located {
		return fmt.Sprintf("JobManager at %s unreachable for %s: start it, or check --jobmanager", e.addrs[0], shortDuration(e.timeout))
	}
	var b strings.Builder
	if len(e.addrs) == 0 {
		fmt.Fprintf(&b, "no JobManager found for %s", shortDuration(e.timeout))
	} else {
		fmt.Fprintf(&b, "no JobManager at %s took the registration for %s", joinAddresses(e.addrs), shortDuration(e.timeout))
	}
	if e.locErr != nil {
		fmt.Fprintf(&b, " (finding the leader: %v)", e.locErr)
	}
	if e.last != nil && len(e.addrs) > 0 {
		fmt.Fprintf(&b, "; last: %v", e.last)
	}
	b.WriteString(": start a JobManager, or check --jobmanager")
	if e.located {
		b.WriteString(" and high-availability.etcd.endpoints")
	}
	return b.String()
}

func (e *unreachableError) Unwrap() []error {
	errs := []error{ErrJobManagerUnreachable}
	if e.last != nil {
		errs = append(errs, e.last)
	}
	return errs
}

// notLeaderError is a standby's NOT_LEADER rejection: transient.
type notLeaderError struct {
	addr, leader, reason string
}

func (e *notLeaderError) Error() string {
	return fmt.Sprintf("JobManager at %s is not the leader: %s", e.addr, e.reason)
}

func (e *notLeaderError) Unwrap() error { return ErrNotLeader }

// staleLeaderError refuses a Registered of an older term than one seen.
func staleLeaderError(addr string, term, newest uint64) error {
	return fmt.Errorf("%w: JobManager at %s leads term %d, but term %d is newer", ErrStaleLeader, addr, term, newest)
}

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

// registrar finds a JobManager that leads and registers with it.
type registrar struct {
	cfg    TaskManagerConfig
	static []string // the --jobmanager list
	fence  *fence
	log    *slog.Logger
	avoid  string // the address of a deposed leader: tried last
	// plain counts, by address, plain connections closed unanswered in a
	// row (the JobManager requires TLS?).
	plain map[string]int
}

// register tries to open a session until it succeeds, is rejected, ctx
// ends or the registration timeout passes. Each round tries every
// candidate in order; a NOT_LEADER rejection naming a leader makes that
// address the next one tried.
func (r *registrar) register(ctx context.Context) (*JobManagerSession, *grpc.ClientConn, grpc.BidiStreamingClient[pb.TaskManagerMessage, pb.JobManagerMessage], error) {
	cfg := r.cfg
	deadline := time.Now().Add(cfg.RegistrationTimeout)
	backoff := cfg.MinBackoff
	var tried []string
	var last, locErr error
	for {
		round, err := candidates(ctx, cfg.Locate, r.static, "")
		if err != nil {
			locErr = err
			r.log.Debug("no leader located", "error", err)
		} else if cfg.Locate != nil {
			locErr = nil
		}
		if r.avoid != "" && len(round) > 1 && slices.Contains(round, r.avoid) {
			round = append(slices.DeleteFunc(round, func(a string) bool { return a == r.avoid }), r.avoid)
		}
		for i := 0; i < len(round); i++ {
			addr := round[i]
			tried = appendNew(tried, addr)
			s, conn, stream, err := attempt(ctx, cfg, addr, deadline)
			if err == nil {
				if newest, _ := r.fence.current(); s.FencingToken < newest {
					// A deposed leader that has not noticed yet.
					conn.Close()
					err = staleLeaderError(addr, s.FencingToken, newest)
					r.log.Warn("refused a session of a deposed leader, looking for the leader", "jobmanager", addr, "term", s.FencingToken, "newest", newest)
				} else {
					r.fence.raise(s.FencingToken)
					r.plain = nil
					return s, conn, stream, nil
				}
			}
			if ctx.Err() != nil {
				return nil, nil, nil, ctx.Err()
			}
			var nl *notLeaderError
			switch {
			case errors.As(err, &nl):
				r.log.Debug("JobManager is a standby", "jobmanager", addr, "leader", nl.leader, "reason", nl.reason)
				// Try the leader it names next, unless this round tried
				// it already (two standbys naming each other).
				if l := nl.leader; l != "" && !slices.Contains(round[:i+1], l) {
					round = slices.DeleteFunc(round, func(a string) bool { return a == l })
					round = slices.Insert(round, i+1, l)
				}
			case errors.Is(err, ErrRejected):
				return nil, nil, nil, err
			case errors.Is(err, security.ErrHandshake):
				// Certificates do not change by waiting.
				r.log.Error("JobManager refused the TLS handshake", "jobmanager", addr, "error", err)
				return nil, nil, nil, err
			case isPlainRefused(err):
				if r.plain == nil {
					r.plain = make(map[string]int)
				}
				if r.plain[addr]++; r.plain[addr] >= plainRefusals {
					r.log.Error("JobManager closed every connection unanswered", "jobmanager", addr, "error", err)
					return nil, nil, nil, err
				}
				r.log.Warn("registration failed", "jobmanager", addr, "error", err)
			case status.Code(err) == codes.AlreadyExists:
				// The JobManager holds another live session under this id.
				r.log.Warn("registration refused for now, retrying", "jobmanager", addr, "error", err)
			default:
				r.log.Debug("registration failed", "jobmanager", addr, "error", err)
			}
			if !isPlainRefused(err) {
				delete(r.plain, addr)
			}
			last = err
			if time.Until(deadline) <= 0 {
				break
			}
		}
		if last == nil && len(round) == 0 {
			last = locErr
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil, nil, &unreachableError{addrs: tried, located: cfg.Locate != nil, locErr: locErr, timeout: cfg.RegistrationTimeout, last: last}
		}
		r.log.Debug("no JobManager took the registration, retrying", "in", backoff, "tried", tried)
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
func attempt(ctx context.Context, cfg TaskManagerConfig, addr string, deadline time.Time) (*JobManagerSession, *grpc.ClientConn, grpc.BidiStreamingClient[pb.TaskManagerMessage, pb.JobManagerMessage], error) {
	creds := newDialCreds(cfg.TLS, addr)
	opts := append(versionClientOptions(int(cfg.protocolVersion)),
		creds.option(),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageSize), grpc.MaxCallSendMsgSize(maxMessageSize)),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: keepaliveTime, Timeout: keepaliveTime / 3, PermitWithoutStream: true}),
	)
	conn, err := grpc.NewClient("passthrough:///"+addr, opts...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("dial JobManager at %s: %w", addr, err)
	}
	// The stream's context must outlive this attempt; closing conn ends it.
	stream, err := pb.NewJobManagerClient(conn).Connect(context.WithoutCancel(ctx))
	if err != nil {
		conn.Close()
		if f := creds.failure(); f != nil && status.Code(err) == codes.Unavailable {
			err = f
		}
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
		err = fmt.Errorf("JobManager at %s did not answer Register", addr)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil {
		switch x := first.GetMsg().(type) {
		case *pb.JobManagerMessage_Registered:
			r := x.Registered
			return &JobManagerSession{
				ID:                r.GetSessionId(),
				JobManager:        addr,
				FencingToken:      r.GetFencingToken(),
				HeartbeatInterval: time.Duration(r.GetHeartbeatIntervalMillis()) * time.Millisecond,
				HeartbeatTimeout:  time.Duration(r.GetHeartbeatTimeoutMillis()) * time.Millisecond,
				out:               newOutbox[*pb.TaskManagerMessage](cfg.QueueLimit),
			}, conn, stream, nil
		case *pb.JobManagerMessage_Rejected:
			if x.Rejected.GetCause() == pb.RejectCause_REJECT_CAUSE_NOT_LEADER {
				err = &notLeaderError{addr: addr, leader: x.Rejected.GetLeaderRpcAddress(), reason: x.Rejected.GetReason()}
			} else {
				err = fmt.Errorf("%w by JobManager at %s: %s", ErrRejected, addr, x.Rejected.GetReason())
			}
		default:
			err = fmt.Errorf("JobManager at %s answered Register with %T: not a weir JobManager of this build", addr, first.GetMsg())
		}
	}
	conn.Close() // also ends the goroutine above if it still waits
	if !answered {
		<-answer
	}
	if f := creds.failure(); f != nil && status.Code(err) == codes.Unavailable {
		err = f
	}
	return nil, nil, nil, err
}

// serve runs a registered session until the JobManager is lost or ctx
// ends, and returns why it ended once its goroutines have and conn is
// closed: no handler call of the session is in progress afterwards.
func serve(ctx context.Context, cfg TaskManagerConfig, s *JobManagerSession, conn *grpc.ClientConn, stream grpc.BidiStreamingClient[pb.TaskManagerMessage, pb.JobManagerMessage], f *fence) error {
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
			if err := fenced(s, m, f); err != nil {
				// A deposed leader's word: drop it and end the session
				// before any of it reaches the handler.
				s.out.close(err)
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
	newest, raised := f.current()
	for {
		if newest > s.FencingToken {
			s.out.close(fmt.Errorf("%w: term %d is newer than term %d of the JobManager at %s", ErrNewLeader, newest, s.FencingToken, s.JobManager))
		}
		select {
		case <-ctx.Done():
			s.out.close(context.Cause(ctx))
		case <-raised:
			newest, raised = f.current()
			continue
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

// fenced returns ErrStaleLeader if m comes from an older leader term than
// the session's or the newest the TaskManager has seen.
func fenced(s *JobManagerSession, m *pb.JobManagerMessage, f *fence) error {
	tok := m.GetFencingToken()
	newest, _ := f.current()
	if tok >= s.FencingToken && tok >= newest {
		return nil
	}
	return fmt.Errorf("%w: the JobManager at %s sent a message of term %d; its session is of term %d and the newest term seen is %d", ErrStaleLeader, s.JobManager, tok, s.FencingToken, max(newest, s.FencingToken))
}

// dispatch hands one message to the handler, answering heartbeat
// requests itself.
func dispatch(h TaskManagerHandler, s *JobManagerSession, m *pb.JobManagerMessage) {
	switch x := m.GetMsg().(type) {
	case *pb.JobManagerMessage_HeartbeatRequest:
		// A full queue closes the session; serve notices.
		hb := &pb.Heartbeat{Seq: x.HeartbeatRequest.GetSeq(), Reports: h.Reports()}
		if w, ok := h.(interface{ weakJobs() []*pb.WeakJobReport }); ok {
			hb.WeakJobs = w.weakJobs()
		}
		_ = s.Send(&pb.TaskManagerMessage{Msg: &pb.TaskManagerMessage_Heartbeat{Heartbeat: hb}})
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
	case *pb.JobManagerMessage_WeakPeers:
		h.WeakPeers(s, x.WeakPeers)
	default:
		// Registered or Rejected again, or a message of a newer protocol
		// version this build cannot know (versions are checked at
		// registration, so a bug on the other side): drop it.
	}
}
