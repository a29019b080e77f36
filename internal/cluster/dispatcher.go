package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/heartbeat"
)

// ErrAddressInUse is returned by Listen when another process holds the
// address.
var ErrAddressInUse = errors.New("address is already in use")

// maxMessageSize bounds one control message either way. A Deploy of a
// large region and an Acknowledge with inline operator state are the big
// ones; gRPC's default of 4 MiB is too tight for the first.
const maxMessageSize = 64 << 20

// keepaliveTime is how often an idle connection is probed by the
// transport: the backstop below heartbeats, for a peer whose socket
// vanished without a reset.
const keepaliveTime = 30 * time.Second

// Listen opens the JobManager's RPC listener on addr (HOST:PORT, port 0
// picks one).
func Listen(addr string) (net.Listener, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("JobManager rpc address %q: %w; want HOST:PORT, e.g. 127.0.0.1:6123", addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("JobManager rpc address %s: %w (another JobManager?): stop that process or choose another --rpc-address", addr, ErrAddressInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("JobManager rpc address %s: %w", addr, err)
	}
	return ln, nil
}

// Dispatcher is the JobManager's gRPC server: it accepts TaskManager
// sessions (Connect), keeps their slots in a SlotPool, watches their
// heartbeats and reports registrations, messages and losses to the
// JobMaster layer through the callbacks of its DispatcherConfig. Client
// RPCs go to DispatcherConfig.Jobs.
//
// Goroutines: gRPC runs one handler per session, which waits for the
// session's end and reports it; one reader and one writer per session; one
// heartbeat loop per Dispatcher. Lock order: TaskManager.mu (held while a message is
// delivered), then Dispatcher.mu, then a session's queue lock.
type Dispatcher struct {
	pb.UnimplementedJobManagerServer

	cfg  DispatcherConfig
	srv  *grpc.Server
	addr net.Addr
	log  *slog.Logger

	stop   chan struct{}
	wg     sync.WaitGroup // heartbeat loop, readers, Serve
	stopMu sync.Once

	mu       sync.Mutex
	stopped  bool
	sessions map[string]*TaskManager // by ResourceID
	pool     *SlotPool
	monitor  *heartbeat.Monitor[*TaskManager]
	seq      uint64
}

// StartDispatcher listens on addr and serves until Stop.
func StartDispatcher(addr string, cfg DispatcherConfig) (*Dispatcher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ln, err := Listen(addr)
	if err != nil {
		return nil, err
	}
	return ServeDispatcher(ln, cfg)
}

// ServeDispatcher serves on ln until Stop, which closes ln.
func ServeDispatcher(ln net.Listener, cfg DispatcherConfig) (*Dispatcher, error) {
	if err := cfg.Validate(); err != nil {
		ln.Close()
		return nil, err
	}
	cfg = cfg.withDefaults()
	d := &Dispatcher{
		cfg:      cfg,
		addr:     ln.Addr(),
		log:      cfg.Logger,
		stop:     make(chan struct{}),
		sessions: make(map[string]*TaskManager),
		pool:     NewSlotPool(),
		monitor:  heartbeat.NewMonitor[*TaskManager](cfg.HeartbeatTimeout),
	}
	opts := append(VersionServerOptions(),
		grpc.WaitForHandlers(true),
		grpc.MaxRecvMsgSize(maxMessageSize),
		grpc.MaxSendMsgSize(maxMessageSize),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepaliveTime / 3, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: keepaliveTime, Timeout: keepaliveTime / 3}),
	)
	opts = append(opts, serverTLSOption(cfg.TLS, d.log)...)
	d.srv = grpc.NewServer(opts...)
	pb.RegisterJobManagerServer(d.srv, d)
	d.wg.Add(2)
	go d.heartbeats()
	go func() {
		defer d.wg.Done()
		if err := d.srv.Serve(ln); err != nil {
			d.log.Error("JobManager rpc: serve", "addr", d.addr, "error", err)
		}
	}()
	d.log.Info("JobManager rpc listening", "addr", d.addr, "tls", cfg.TLS != nil)
	return d, nil
}

// Addr returns the address the Dispatcher listens on.
func (d *Dispatcher) Addr() net.Addr { return d.addr }

// Stop ends every session (each TaskManager is reported lost with
// ErrDispatcherStopped), closes the listener and returns once every
// goroutine of the Dispatcher has ended.
func (d *Dispatcher) Stop() {
	d.stopMu.Do(func() {
		d.mu.Lock()
		d.stopped = true
		for _, tm := range d.sessions {
			tm.out.close(ErrDispatcherStopped)
		}
		d.mu.Unlock()
		close(d.stop)
		d.srv.Stop()
		d.wg.Wait()
	})
}

// TaskManager returns the current session of the TaskManager id, or nil.
func (d *Dispatcher) TaskManager(id string) *TaskManager {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sessions[id]
}

// TaskManagers returns every registered TaskManager's slot counts in
// registration order.
func (d *Dispatcher) TaskManagers() []TaskManagerSlots {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pool.TaskManagers()
}

// WithSlotPool runs f with the slot pool, which no one else touches
// meanwhile. f must not block or call the Dispatcher.
func (d *Dispatcher) WithSlotPool(f func(*SlotPool)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(d.pool)
}

// Connect serves one TaskManager session.
func (d *Dispatcher) Connect(stream grpc.BidiStreamingServer[pb.TaskManagerMessage, pb.JobManagerMessage]) error {
	ctx := stream.Context()
	addr := "unknown address"
	if p, ok := peer.FromContext(ctx); ok {
		addr = p.Addr.String()
	}
	reg, err := d.awaitRegister(stream)
	if err != nil {
		d.log.Warn("TaskManager session refused", "addr", addr, "error", err)
		return err
	}
	if rej := checkRegister(reg, d.cfg.BuildID); rej != nil {
		d.log.Warn("TaskManager rejected", "tm", reg.GetResourceId(), "addr", addr, "reason", rej.Reason)
		return stream.Send(&pb.JobManagerMessage{Msg: &pb.JobManagerMessage_Rejected{Rejected: rej}})
	}
	tm := &TaskManager{
		ID:             reg.GetResourceId(),
		Session:        newSessionID(),
		Addr:           addr,
		Slots:          int(reg.GetSlots()),
		DataAddress:    reg.GetDataAddress(),
		MetricsAddress: reg.GetMetricsAddress(),
		AppFingerprint: reg.GetAppFingerprint(),
		Registered:     d.cfg.Now(),
		out:            newOutbox[*pb.JobManagerMessage](d.cfg.QueueLimit),
		finished:       make(chan struct{}),
	}
	tm.out.push(&pb.JobManagerMessage{Msg: &pb.JobManagerMessage_Registered{Registered: &pb.Registered{
		SessionId:               tm.Session,
		HeartbeatIntervalMillis: d.cfg.HeartbeatInterval.Milliseconds(),
		HeartbeatTimeoutMillis:  d.cfg.HeartbeatTimeout.Milliseconds(),
		ProtocolVersion:         ProtocolVersion,
		BuildId:                 d.cfg.BuildID,
		FencingToken:            d.cfg.FencingToken,
	}}})
	if err := d.admit(ctx, tm); err != nil {
		return err
	}
	d.log.Info("TaskManager registered", "tm", tm.ID, "addr", addr, "slots", tm.Slots, "session", tm.Session)
	if f := d.cfg.OnTaskManagerRegistered; f != nil {
		f(tm)
	}

	// The writer runs aside: a Send blocked on a peer that stopped reading
	// (gRPC flow control) ends only when this handler returns, and the
	// handler must return when the queue overflows.
	d.wg.Add(2)
	go d.read(stream, tm)
	go func() {
		defer d.wg.Done()
		// Every message carries the term, set here on its way out: the
		// gateways build one message per TaskManager, and only this
		// writer touches it after its push.
		send := func(m *pb.JobManagerMessage) error {
			m.FencingToken = d.cfg.FencingToken
			return stream.Send(m)
		}
		if err := tm.out.pump(send, ctx.Done()); err != nil {
			tm.out.close(fmt.Errorf("%w: send: %w", ErrStreamClosed, err))
		}
	}()
	select {
	case <-tm.out.done:
	case <-ctx.Done():
		tm.out.close(fmt.Errorf("%w: %w", ErrStreamClosed, context.Cause(ctx)))
	}
	reason := d.lose(tm)
	return status.Error(codes.Unavailable, reason.Error())
}

// awaitRegister reads the session's first message, which must be a
// Register, within heartbeat.timeout.
func (d *Dispatcher) awaitRegister(stream grpc.BidiStreamingServer[pb.TaskManagerMessage, pb.JobManagerMessage]) (*pb.Register, error) {
	type result struct {
		m   *pb.TaskManagerMessage
		err error
	}
	// Recv cannot be interrupted but by the handler returning, so it runs
	// aside; after a timeout the handler returns and Recv fails.
	first := make(chan result, 1)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		m, err := stream.Recv()
		first <- result{m, err}
	}()
	t := time.NewTimer(d.cfg.HeartbeatTimeout)
	defer t.Stop()
	select {
	case r := <-first:
		if r.err != nil {
			return nil, r.err
		}
		reg := r.m.GetRegister()
		if reg == nil {
			return nil, status.Errorf(codes.InvalidArgument, "first message of a session is %T, want Register: the peer is not a weir TaskManager of this build", r.m.GetMsg())
		}
		return reg, nil
	case <-t.C:
		return nil, status.Errorf(codes.DeadlineExceeded, "no Register within %s (heartbeat.timeout)", d.cfg.HeartbeatTimeout)
	case <-d.stop:
		return nil, status.Error(codes.Unavailable, ErrDispatcherStopped.Error())
	}
}

// admit makes tm the TaskManager's session: an older session of the same
// TaskManager is ended first and its loss reported, so the JobMaster
// learns of the loss before the return. Then tm's slots join the pool.
func (d *Dispatcher) admit(ctx context.Context, tm *TaskManager) error {
	for {
		d.mu.Lock()
		if d.stopped {
			d.mu.Unlock()
			return status.Error(codes.Unavailable, ErrDispatcherStopped.Error())
		}
		old := d.sessions[tm.ID]
		if old != nil && old.DataAddress != tm.DataAddress {
			// Another process under the same id (a copied --resource-id),
			// or this TaskManager restarted before its old session's loss
			// was noticed: replacing a live session would restart the jobs
			// that run there at every registration, back and forth. The
			// newcomer retries until the old session ends.
			d.mu.Unlock()
			return status.Errorf(codes.AlreadyExists, "TaskManager id %s is registered already, from %s with data address %s (this one: %s): give every TaskManager its own --resource-id; a restarted one is admitted once its old session ends (at most heartbeat.timeout %s)",
				tm.ID, old.Addr, old.DataAddress, tm.DataAddress, d.cfg.HeartbeatTimeout)
		}
		if old == nil {
			if err := d.pool.Offer(tm.ID, tm.Slots); err != nil {
				d.mu.Unlock()
				panic(fmt.Sprintf("cluster: offer of a checked registration: %v", err)) // lose removes a TaskManager before its session is gone
			}
			d.sessions[tm.ID] = tm
			d.monitor.Seen(tm, d.cfg.Now())
			d.mu.Unlock()
			return nil
		}
		d.mu.Unlock()
		old.out.close(fmt.Errorf("%w: new session from %s", ErrReplaced, tm.Addr))
		select {
		case <-old.finished:
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
}

// read receives the session's messages until the stream ends.
func (d *Dispatcher) read(stream grpc.BidiStreamingServer[pb.TaskManagerMessage, pb.JobManagerMessage], tm *TaskManager) {
	defer d.wg.Done()
	for {
		m, err := stream.Recv()
		if err != nil {
			tm.out.close(fmt.Errorf("%w: %w", ErrStreamClosed, err))
			return
		}
		d.mu.Lock()
		if d.sessions[tm.ID] == tm {
			d.monitor.Seen(tm, d.cfg.Now())
		}
		d.mu.Unlock()
		switch x := m.GetMsg().(type) {
		case *pb.TaskManagerMessage_Heartbeat:
			reports := x.Heartbeat.GetReports()
			tm.reports.Store(&reports)
			if f := d.cfg.OnWeakReports; f != nil && len(x.Heartbeat.GetWeakJobs()) > 0 {
				f(tm, x.Heartbeat.GetWeakJobs())
			}
		case *pb.TaskManagerMessage_Register:
			tm.out.close(fmt.Errorf("%w: a second Register on one session: the peer is not a weir TaskManager of this build", ErrStreamClosed))
			return
		default:
			tm.deliver(d.cfg.OnTaskManagerMessage, m)
		}
	}
}

// lose ends tm's session after its queue closed: no more deliveries, its
// slots leave the pool, OnTaskManagerLost is called. It returns the
// reason.
func (d *Dispatcher) lose(tm *TaskManager) error {
	reason := fmt.Errorf("TaskManager %s lost: %w", tm, tm.out.cause())
	tm.seal()
	var slots []JobSlots
	d.mu.Lock()
	if d.sessions[tm.ID] == tm {
		delete(d.sessions, tm.ID)
		slots = d.pool.Lost(tm.ID)
	}
	d.monitor.Remove(tm)
	d.mu.Unlock()
	d.log.Warn("TaskManager lost", "tm", tm.ID, "addr", tm.Addr, "session", tm.Session, "reason", reason)
	if f := d.cfg.OnTaskManagerLost; f != nil {
		f(tm, reason, slots)
	}
	close(tm.finished)
	return reason
}

// heartbeats asks every TaskManager for a heartbeat each interval and
// ends the sessions of those silent for the timeout.
func (d *Dispatcher) heartbeats() {
	defer d.wg.Done()
	next := d.cfg.Now().Add(d.cfg.HeartbeatInterval)
	t := time.NewTimer(d.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
		}
		now := d.cfg.Now()
		d.mu.Lock()
		if !now.Before(next) {
			d.seq++
			for _, tm := range d.sessions {
				// A failure closed the session; its handler reports it.
				_ = tm.out.push(&pb.JobManagerMessage{Msg: &pb.JobManagerMessage_HeartbeatRequest{HeartbeatRequest: &pb.HeartbeatRequest{Seq: d.seq}}})
			}
			next = now.Add(d.cfg.HeartbeatInterval)
		}
		for _, tm := range d.monitor.Expired(now) {
			tm.out.close(fmt.Errorf("%w: no heartbeat for %s", ErrHeartbeatTimeout, d.cfg.HeartbeatTimeout))
		}
		wake := next
		if at, ok := d.monitor.NextDeadline(); ok && at.Before(wake) {
			wake = at
		}
		d.mu.Unlock()
		t.Reset(wake.Sub(now))
	}
}

// newSessionID returns a random session id.
func newSessionID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Submit, Wait, List, Cancel and Checkpoints route to DispatcherConfig.Jobs.

func (d *Dispatcher) Submit(ctx context.Context, r *pb.SubmitRequest) (*pb.SubmitResponse, error) {
	if d.cfg.Jobs == nil {
		return d.UnimplementedJobManagerServer.Submit(ctx, r)
	}
	return d.cfg.Jobs.Submit(ctx, r)
}

func (d *Dispatcher) Wait(r *pb.WaitRequest, s grpc.ServerStreamingServer[pb.JobUpdate]) error {
	if d.cfg.Jobs == nil {
		return d.UnimplementedJobManagerServer.Wait(r, s)
	}
	return d.cfg.Jobs.Wait(r, s)
}

func (d *Dispatcher) List(ctx context.Context, r *pb.ListRequest) (*pb.ListResponse, error) {
	if d.cfg.Jobs == nil {
		return d.UnimplementedJobManagerServer.List(ctx, r)
	}
	return d.cfg.Jobs.List(ctx, r)
}

func (d *Dispatcher) Cancel(ctx context.Context, r *pb.CancelRequest) (*pb.CancelResponse, error) {
	if d.cfg.Jobs == nil {
		return d.UnimplementedJobManagerServer.Cancel(ctx, r)
	}
	return d.cfg.Jobs.Cancel(ctx, r)
}

func (d *Dispatcher) Checkpoints(ctx context.Context, r *pb.CheckpointsRequest) (*pb.CheckpointsResponse, error) {
	if d.cfg.Jobs == nil {
		return d.UnimplementedJobManagerServer.Checkpoints(ctx, r)
	}
	return d.cfg.Jobs.Checkpoints(ctx, r)
}
