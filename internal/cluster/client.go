package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/security"
)

// ErrVersionMismatch is wrapped by a client's error when the JobManager
// speaks another cluster protocol version.
var ErrVersionMismatch = errors.New("cluster protocol version mismatch")

// ErrUnknownJob is wrapped by a client's error when the JobManager does
// not know the job (the JobService answers NotFound).
var ErrUnknownJob = errors.New("unknown job")

// Client defaults.
const (
	DefaultDialTimeout      = 5 * time.Second
	DefaultReconnectTimeout = 5 * time.Minute
)

// ClientConfig configures a client of a JobManager: weir run
// --jobmanager, weir list, cancel and checkpoints.
type ClientConfig struct {
	// Address is the JobManager's rpc address, HOST:PORT (--jobmanager),
	// or a comma-separated list of several JobManagers' (high
	// availability: one leads, the others stand by).
	Address string
	// Locate, if set, returns candidate JobManagers' rpc addresses, best
	// first (under high availability: the leader recorded in etcd); they
	// are tried before the Address list. Every reconnection asks again.
	Locate func(ctx context.Context) ([]string, error)
	// DialTimeout bounds the wait for the first connection
	// (DefaultDialTimeout).
	DialTimeout time.Duration
	// ReconnectTimeout is how long Wait keeps reconnecting to a JobManager
	// that went away (restarted, or the network broke) before it gives up
	// (DefaultReconnectTimeout).
	ReconnectTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait between reconnection
	// attempts (DefaultMinBackoff, DefaultMaxBackoff: 100ms to 5s).
	MinBackoff, MaxBackoff time.Duration
	// TLS, if set, dials with mutual TLS (security.ssl.internal.*); nil
	// is plain TCP.
	TLS *TLS
	// Command is the program name that messages tell the user to run
	// ("weir" when empty): "start one with `weir jobmanager`".
	Command string

	// protocolVersion is ProtocolVersion except in tests of the refusal.
	protocolVersion int
}

func (c ClientConfig) withDefaults() ClientConfig {
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.ReconnectTimeout == 0 {
		c.ReconnectTimeout = DefaultReconnectTimeout
	}
	if c.MinBackoff == 0 {
		c.MinBackoff = DefaultMinBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.Command == "" {
		c.Command = "weir"
	}
	if c.protocolVersion == 0 {
		c.protocolVersion = ProtocolVersion
	}
	return c
}

// Client calls a JobManager's client RPCs. Its errors name the cause and
// the fix: an unreachable JobManager wraps ErrJobManagerUnreachable, a
// refused protocol version ErrVersionMismatch, a job the JobManager does
// not know ErrUnknownJob, standbys that know no leader ErrNotLeader. It is
// safe for concurrent use.
//
// Given several JobManagers (an Address list, Locate) the client follows
// the leader: a call a standby answers with FailedPrecondition naming the
// leader (LeaderRPCHeader) is repeated once on the leader, and a call
// that finds its JobManager gone (Unavailable) is repeated once on the
// next JobManager found.
type Client struct {
	cfg    ClientConfig
	static []string // the Address list

	mu      sync.Mutex // guards cur and retired
	cur     *jmConn
	retired []*grpc.ClientConn // replaced connections; calls may still use them
}

// jmConn is a connection to one JobManager.
type jmConn struct {
	addr string
	conn *grpc.ClientConn
	rpc  pb.JobManagerClient
}

// Dial connects to the JobManager at cfg.Address (the first one of the
// list, or of Locate's answer, that accepts a connection) and waits up to
// cfg.DialTimeout for the connection, so that a wrong address fails here
// with a message naming it rather than at the first call.
func Dial(ctx context.Context, cfg ClientConfig) (*Client, error) {
	cfg = cfg.withDefaults()
	static, err := SplitAddresses(cfg.Address)
	if err != nil {
		return nil, err
	}
	if len(static) == 0 && cfg.Locate == nil {
		return nil, fmt.Errorf("JobManager address %q: want HOST:PORT, e.g. 127.0.0.1:6123", cfg.Address)
	}
	c := &Client{cfg: cfg, static: static}
	jc, err := c.find(ctx, "", "")
	if err != nil {
		return nil, err
	}
	c.cur = jc
	return c, nil
}

// single reports whether the client knows one JobManager only, jc: then
// a lost connection is waited for, never replaced. A client that a
// standby sent to the leader knows two.
func (c *Client) single(jc *jmConn) bool {
	return c.cfg.Locate == nil && len(c.static) == 1 && c.static[0] == jc.addr
}

// find connects to the first candidate (hint, Locate's answer, the list;
// avoid last) that accepts a connection within DialTimeout.
func (c *Client) find(ctx context.Context, hint, avoid string) (*jmConn, error) {
	dctx, cancel := context.WithTimeout(ctx, c.cfg.DialTimeout)
	defer cancel()
	var tried []string
	var last, locErr error
	delay := c.cfg.MinBackoff
	for {
		round, err := candidates(dctx, c.cfg.Locate, c.static, hint)
		if err != nil && (dctx.Err() == nil || locErr == nil) {
			locErr = err // keep a real answer over a timeout's
		}
		if avoid != "" && len(round) > 1 && slices.Contains(round, avoid) {
			round = append(slices.DeleteFunc(round, func(a string) bool { return a == avoid }), avoid)
		}
		for _, addr := range round {
			tried = appendNew(tried, addr)
			jc, err := c.connect(dctx, addr, len(round) == 1)
			if err == nil {
				return jc, nil
			}
			if errors.Is(err, security.ErrHandshake) || isPlainRefused(err) {
				return nil, err
			}
			last = err
			if dctx.Err() != nil {
				break
			}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if last == nil {
			last = locErr
		}
		if dctx.Err() != nil {
			return nil, c.unreachable(tried, locErr, nil, fmt.Errorf("no connection within %s: %w", c.cfg.DialTimeout, last))
		}
		t := time.NewTimer(delay)
		select {
		case <-dctx.Done():
			t.Stop()
		case <-t.C:
		}
		delay = min(2*delay, c.cfg.MaxBackoff)
	}
}

// connect dials addr and waits until the connection is ready or ctx ends;
// unless patient, a failed connection attempt fails at once.
func (c *Client) connect(ctx context.Context, addr string, patient bool) (*jmConn, error) {
	bc := backoff.DefaultConfig
	bc.BaseDelay, bc.MaxDelay = c.cfg.MinBackoff, c.cfg.MaxBackoff
	creds := newDialCreds(c.cfg.TLS, addr)
	opts := append(versionClientOptions(c.cfg.protocolVersion),
		creds.option(),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageSize), grpc.MaxCallSendMsgSize(maxMessageSize)),
		// gRPC's own reconnection backoff grows to 2 minutes; a restarted
		// JobManager must be found within Wait's backoff instead.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: bc, MinConnectTimeout: c.cfg.DialTimeout}),
	)
	conn, err := grpc.NewClient("passthrough:///"+addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("dial JobManager at %s: %w", addr, err)
	}
	conn.Connect()
	for {
		s := conn.GetState()
		if s == connectivity.Ready {
			return &jmConn{addr: addr, conn: conn, rpc: pb.NewJobManagerClient(conn)}, nil
		}
		if s == connectivity.TransientFailure {
			if f := creds.failure(); f != nil && (!patient || creds.final() != nil) {
				conn.Close()
				return nil, f
			}
		}
		if s == connectivity.TransientFailure && !patient {
			conn.Close()
			return nil, fmt.Errorf("JobManager at %s: connection failed", addr)
		}
		// A failing connection stays in TransientFailure while gRPC
		// retries, so look at the failures again now and then.
		wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		changed := conn.WaitForStateChange(wctx, s)
		cancel()
		if !changed && ctx.Err() != nil {
			conn.Close()
			if f := creds.failure(); f != nil {
				return nil, f
			}
			return nil, fmt.Errorf("JobManager at %s: %s", addr, s)
		}
	}
}

// current returns the JobManager the client calls now.
func (c *Client) current() *jmConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}

// move replaces the connection from by one to another JobManager: hint
// (the leader a standby named) first, from last. Calls in flight on the
// old connection go on; Close closes it.
func (c *Client) move(ctx context.Context, from *jmConn, hint string) (*jmConn, error) {
	next, err := c.find(ctx, hint, from.addr)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != from { // another call moved first
		next.conn.Close()
		return c.cur, nil
	}
	c.retired = append(c.retired, c.cur.conn)
	c.cur = next
	return next, nil
}

// Close closes the connections.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.retired {
		conn.Close()
	}
	c.retired = nil
	return c.cur.conn.Close()
}

// Address returns the address of the JobManager the client calls (the
// leader, once a call found it).
func (c *Client) Address() string { return c.current().addr }

// call runs one unary RPC (fn passes opts to it) on the current
// JobManager. A standby's refusal moves the client to the leader it names
// and repeats the call there once; so does a lost JobManager when the
// client knows others. The error is callError's for op.
func (c *Client) call(ctx context.Context, op, job string, fn func(ctx context.Context, jm pb.JobManagerClient, opts ...grpc.CallOption) error) error {
	jc := c.current()
	var header, trailer metadata.MD
	err := fn(ctx, jc.rpc, grpc.Header(&header), grpc.Trailer(&trailer))
	if err == nil {
		return nil
	}
	leader, standby := standbyAnswer(err, header, trailer)
	if standby || (status.Code(err) == codes.Unavailable && !c.single(jc)) {
		if ctx.Err() != nil {
			return c.callError(op, job, err, standby)
		}
		next, merr := c.move(ctx, jc, leader)
		if merr != nil {
			if standby && leader != "" {
				return fmt.Errorf("%s: %s, which does not answer: %w", op, status.Convert(err).Message(), merr)
			}
			return c.callError(op, job, err, standby)
		}
		header, trailer = nil, nil
		err = fn(ctx, next.rpc, grpc.Header(&header), grpc.Trailer(&trailer))
		if err == nil {
			return nil
		}
		_, standby = standbyAnswer(err, header, trailer)
	}
	return c.callError(op, job, err, standby)
}

// SubmitOption adjusts a submission (Rerun).
type SubmitOption func(*pb.SubmitRequest)

// Rerun makes the JobManager run the job from scratch although its
// checkpoint folder records a run of it that FINISHED (weir run --rerun);
// without it such a submission is refused.
func Rerun() SubmitOption { return func(r *pb.SubmitRequest) { r.Rerun = true } }

// Submit submits a job and returns its id (its name).
func (c *Client) Submit(ctx context.Context, spec deployment.JobSpec, sopts ...SubmitOption) (string, error) {
	if err := spec.Validate(); err != nil {
		return "", err
	}
	var r *pb.SubmitResponse
	err := c.call(ctx, "submit job "+spec.Name, spec.Name, func(ctx context.Context, jm pb.JobManagerClient, opts ...grpc.CallOption) (err error) {
		req := &pb.SubmitRequest{Spec: clientSpecPB(spec)}
		for _, o := range sopts {
			o(req)
		}
		r, err = jm.Submit(ctx, req, opts...)
		return err
	})
	if err != nil {
		return "", err
	}
	return r.GetJob(), nil
}

// clientSpecPB converts a spec for SubmitRequest.
func clientSpecPB(s deployment.JobSpec) *pb.JobSpec {
	p := &pb.JobSpec{Name: s.Name, Kind: s.Kind, Args: s.Args, Config: s.Config}
	if s.Fingerprint != ([32]byte{}) {
		p.Fingerprint = s.Fingerprint[:]
	}
	return p
}

// List returns every job the JobManager knows.
func (c *Client) List(ctx context.Context) ([]*pb.JobSummary, error) {
	var r *pb.ListResponse
	err := c.call(ctx, "list jobs", "", func(ctx context.Context, jm pb.JobManagerClient, opts ...grpc.CallOption) (err error) {
		r, err = jm.List(ctx, &pb.ListRequest{}, opts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return r.GetJobs(), nil
}

// Cancel cancels a job.
func (c *Client) Cancel(ctx context.Context, job string) error {
	return c.call(ctx, "cancel job "+job, job, func(ctx context.Context, jm pb.JobManagerClient, opts ...grpc.CallOption) error {
		_, err := jm.Cancel(ctx, &pb.CancelRequest{Job: job}, opts...)
		return err
	})
}

// Checkpoints returns a job's checkpoint counts and recent history.
func (c *Client) Checkpoints(ctx context.Context, job string) (*pb.CheckpointsResponse, error) {
	var r *pb.CheckpointsResponse
	err := c.call(ctx, "checkpoints of job "+job, job, func(ctx context.Context, jm pb.JobManagerClient, opts ...grpc.CallOption) (err error) {
		r, err = jm.Checkpoints(ctx, &pb.CheckpointsRequest{Job: job}, opts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Wait follows a job's updates until one is terminal and returns it;
// onUpdate (may be nil) sees every update in order, repeats after a
// reconnection included. When the JobManager goes away (a restart, a
// failover) Wait reconnects with backoff (MinBackoff doubling to
// MaxBackoff) for up to ReconnectTimeout of unbroken absence, then fails
// wrapping ErrJobManagerUnreachable. Given several JobManagers it looks
// for the leader at every reconnection (Locate, the list, the leader a
// standby names) and follows the job, by its name, there. ctx ends the
// wait, not the job.
func (c *Client) Wait(ctx context.Context, job string, onUpdate func(*pb.JobUpdate)) (*pb.JobUpdate, error) {
	var away time.Time // when the JobManager was last lost; zero while connected
	delay := c.cfg.MinBackoff
	redirected := false // a standby's leader was tried at once since the last progress
	for {
		jc := c.current()
		last, progressed, leader, standby, err := c.follow(ctx, jc, job, onUpdate)
		if err == nil {
			return last, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !reconnectable(err) && !standby {
			return nil, c.callError("wait for job "+job, job, err, false)
		}
		if progressed || away.IsZero() {
			away, delay, redirected = time.Now(), c.cfg.MinBackoff, false
		}
		if time.Since(away) >= c.cfg.ReconnectTimeout {
			return nil, &clientUnreachableError{addrs: []string{jc.addr}, located: c.cfg.Locate != nil, command: c.cfg.Command,
				cause: fmt.Errorf("lost while waiting for job %s, and no leader back within %s", job, shortDuration(c.cfg.ReconnectTimeout)), last: err}
		}
		if leader != "" && leader != jc.addr && !redirected {
			// A standby named the leader: go there at once.
			redirected = true
			if _, err := c.move(ctx, jc, leader); err == nil {
				continue
			}
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, c.cfg.MaxBackoff)
		if c.single(jc) {
			jc.conn.Connect() // an idle channel does not reconnect by itself
		} else if _, err := c.move(ctx, jc, leader); err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// follow reads one Wait stream from jc. progressed reports whether the
// stream delivered anything, which proves the JobManager was reachable;
// leader and standby describe a standby's refusal.
func (c *Client) follow(ctx context.Context, jc *jmConn, job string, onUpdate func(*pb.JobUpdate)) (last *pb.JobUpdate, progressed bool, leader string, standby bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := jc.rpc.Wait(ctx, &pb.WaitRequest{Job: job})
	if err != nil {
		return nil, false, "", false, err
	}
	for {
		u, err := s.Recv()
		if err == io.EOF {
			// The JobManager ended the stream without a terminal update:
			// it is stopping. Its successor answers the next Wait.
			return nil, progressed, "", false, status.Error(codes.Unavailable, "JobManager ended the update stream before the job ended")
		}
		if err != nil {
			header, _ := s.Header()
			leader, standby := standbyAnswer(err, header, s.Trailer())
			return nil, progressed, leader, standby, err
		}
		progressed = true
		if onUpdate != nil {
			onUpdate(u)
		}
		if u.GetTerminal() {
			return u, true, "", false, nil
		}
	}
}

// reconnectable reports whether err means the JobManager is (for now)
// away rather than that it refused the call.
func reconnectable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable:
		return true
	}
	return false
}

// callError turns an RPC error into one that names the cause and the fix;
// standby says that a standby JobManager gave it.
func (c *Client) callError(op, job string, err error, standby bool) error {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("%s: %w", op, err)
	}
	msg := st.Message()
	addr := c.Address()
	if standby {
		// The standby's message names itself and the leader, if any.
		if st.Code() == codes.Unavailable {
			return &clientUnreachableError{addrs: []string{addr}, located: c.cfg.Locate != nil, command: c.cfg.Command,
				cause: fmt.Errorf("answers: %s", msg), last: errors.Join(ErrNotLeader, err), op: op}
		}
		return fmt.Errorf("%s: %s: the leader changed again, or does not answer; try again: %w", op, msg, ErrNotLeader)
	}
	switch st.Code() {
	case codes.Unavailable:
		return c.unreachable([]string{addr}, nil, nil, err)
	case codes.DeadlineExceeded:
		return fmt.Errorf("%s: JobManager at %s did not answer in time: %w", op, addr, err)
	case codes.FailedPrecondition:
		if strings.Contains(msg, "cluster protocol") {
			return fmt.Errorf("%s: JobManager at %s refused this client: %s: %w", op, addr, msg, ErrVersionMismatch)
		}
		return fmt.Errorf("%s: %s", op, msg)
	case codes.NotFound:
		if job == "" {
			return fmt.Errorf("%s: %s", op, msg)
		}
		return fmt.Errorf("%s: the JobManager at %s has no job %q (%s): `%s list --jobmanager %s` shows its jobs: %w",
			op, addr, job, msg, c.cfg.Command, addr, ErrUnknownJob)
	case codes.AlreadyExists:
		return fmt.Errorf("%s: the JobManager at %s already has it (%s): choose another --job-name, or cancel that job first (`%s cancel %s --jobmanager %s`)", op, addr, msg, c.cfg.Command, job, addr)
	case codes.Unimplemented:
		return fmt.Errorf("%s: the JobManager at %s does not serve this call (%s): run the same weir build in every role", op, addr, msg)
	}
	return fmt.Errorf("%s: %s", op, msg)
}

// unreachable is the error for JobManagers that cannot be reached.
func (c *Client) unreachable(addrs []string, locErr, cause, last error) error {
	return &clientUnreachableError{addrs: addrs, located: c.cfg.Locate != nil, locErr: locErr, command: c.cfg.Command, cause: cause, last: last}
}

// clientUnreachableError says that no JobManager answers at addrs (or
// none leads) and how to start one; it wraps ErrJobManagerUnreachable and
// the last error.
type clientUnreachableError struct {
	op      string   // the call, if the error is a call's
	addrs   []string // every address tried
	located bool     // the candidates came from Locate too
	locErr  error    // Locate's error, if any
	command string
	cause   error // what happened, if more than "not reachable"
	last    error
}

func (e *clientUnreachableError) Error() string {
	var b strings.Builder
	if e.op != "" {
		b.WriteString(e.op + ": ")
	}
	switch {
	case len(e.addrs) == 0:
		b.WriteString("no JobManager found")
	case e.cause != nil:
		fmt.Fprintf(&b, "JobManager at %s %v", joinAddresses(e.addrs), e.cause)
	default:
		fmt.Fprintf(&b, "no JobManager at %s", joinAddresses(e.addrs))
	}
	if e.locErr != nil {
		fmt.Fprintf(&b, " (finding the leader: %v)", e.locErr)
	}
	fmt.Fprintf(&b, ": start one with `%s jobmanager`, or check --jobmanager", e.command)
	if e.located {
		b.WriteString(" and high-availability.etcd.endpoints")
	}
	return b.String()
}

func (e *clientUnreachableError) Unwrap() []error {
	errs := []error{ErrJobManagerUnreachable}
	if e.last != nil {
		errs = append(errs, e.last)
	}
	return errs
}
