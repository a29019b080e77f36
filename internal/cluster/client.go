package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/runtime"
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
	// Address is the JobManager's rpc address, HOST:PORT (--jobmanager).
	Address string
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
// not know ErrUnknownJob. It is safe for concurrent use.
type Client struct {
	cfg  ClientConfig
	conn *grpc.ClientConn
	rpc  pb.JobManagerClient
}

// Dial connects to the JobManager at cfg.Address and waits up to
// cfg.DialTimeout for the connection, so that a wrong address fails here
// with a message naming it rather than at the first call.
func Dial(ctx context.Context, cfg ClientConfig) (*Client, error) {
	cfg = cfg.withDefaults()
	if _, _, err := net.SplitHostPort(cfg.Address); err != nil {
		return nil, fmt.Errorf("JobManager address %q: %w; want HOST:PORT, e.g. 127.0.0.1:6123", cfg.Address, err)
	}
	bc := backoff.DefaultConfig
	bc.BaseDelay, bc.MaxDelay = cfg.MinBackoff, cfg.MaxBackoff
	opts := append(versionClientOptions(cfg.protocolVersion),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageSize), grpc.MaxCallSendMsgSize(maxMessageSize)),
		// gRPC's own reconnection backoff grows to 2 minutes; a restarted
		// JobManager must be found within Wait's backoff instead.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: bc, MinConnectTimeout: cfg.DialTimeout}),
	)
	conn, err := grpc.NewClient("passthrough:///"+cfg.Address, opts...)
	if err != nil {
		return nil, fmt.Errorf("dial JobManager at %s: %w", cfg.Address, err)
	}
	c := &Client{cfg: cfg, conn: conn, rpc: pb.NewJobManagerClient(conn)}
	dctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	conn.Connect()
	for {
		s := conn.GetState()
		if s == connectivity.Ready {
			return c, nil
		}
		if !conn.WaitForStateChange(dctx, s) {
			conn.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, c.unreachable(fmt.Errorf("no connection within %s (%s)", cfg.DialTimeout, s))
		}
	}
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Address returns the JobManager's address.
func (c *Client) Address() string { return c.cfg.Address }

// Submit submits a job and returns its id (its name).
func (c *Client) Submit(ctx context.Context, spec runtime.JobSpec) (string, error) {
	if err := spec.Validate(); err != nil {
		return "", err
	}
	r, err := c.rpc.Submit(ctx, &pb.SubmitRequest{Spec: clientSpecPB(spec)})
	if err != nil {
		return "", c.callError("submit job "+spec.Name, spec.Name, err)
	}
	return r.GetJob(), nil
}

// clientSpecPB converts a spec for SubmitRequest.
func clientSpecPB(s runtime.JobSpec) *pb.JobSpec {
	p := &pb.JobSpec{Name: s.Name, Kind: s.Kind, Args: s.Args, Config: s.Config}
	if s.Fingerprint != ([32]byte{}) {
		p.Fingerprint = s.Fingerprint[:]
	}
	return p
}

// List returns every job the JobManager knows.
func (c *Client) List(ctx context.Context) ([]*pb.JobSummary, error) {
	r, err := c.rpc.List(ctx, &pb.ListRequest{})
	if err != nil {
		return nil, c.callError("list jobs", "", err)
	}
	return r.GetJobs(), nil
}

// Cancel cancels a job.
func (c *Client) Cancel(ctx context.Context, job string) error {
	if _, err := c.rpc.Cancel(ctx, &pb.CancelRequest{Job: job}); err != nil {
		return c.callError("cancel job "+job, job, err)
	}
	return nil
}

// Checkpoints returns a job's checkpoint counts and recent history.
func (c *Client) Checkpoints(ctx context.Context, job string) (*pb.CheckpointsResponse, error) {
	r, err := c.rpc.Checkpoints(ctx, &pb.CheckpointsRequest{Job: job})
	if err != nil {
		return nil, c.callError("checkpoints of job "+job, job, err)
	}
	return r, nil
}

// Wait follows a job's updates until one is terminal and returns it;
// onUpdate (may be nil) sees every update in order, repeats after a
// reconnection included. When the JobManager goes away (a restart) Wait
// reconnects with backoff (MinBackoff doubling to MaxBackoff) for up to
// ReconnectTimeout of unbroken absence, then fails wrapping
// ErrJobManagerUnreachable. ctx ends the wait, not the job.
func (c *Client) Wait(ctx context.Context, job string, onUpdate func(*pb.JobUpdate)) (*pb.JobUpdate, error) {
	var away time.Time // when the JobManager was last lost; zero while connected
	delay := c.cfg.MinBackoff
	for {
		last, progressed, err := c.follow(ctx, job, onUpdate)
		if err == nil {
			return last, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !reconnectable(err) {
			return nil, c.callError("wait for job "+job, job, err)
		}
		if progressed || away.IsZero() {
			away, delay = time.Now(), c.cfg.MinBackoff
		}
		if time.Since(away) >= c.cfg.ReconnectTimeout {
			return nil, &clientUnreachableError{addr: c.cfg.Address, command: c.cfg.Command,
				cause: fmt.Errorf("lost while waiting for job %s, and not back within %s", job, shortDuration(c.cfg.ReconnectTimeout)), last: err}
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, c.cfg.MaxBackoff)
		c.conn.Connect() // an idle channel does not reconnect by itself
	}
}

// follow reads one Wait stream. progressed reports whether the stream
// delivered anything, which proves the JobManager was reachable.
func (c *Client) follow(ctx context.Context, job string, onUpdate func(*pb.JobUpdate)) (last *pb.JobUpdate, progressed bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := c.rpc.Wait(ctx, &pb.WaitRequest{Job: job})
	if err != nil {
		return nil, false, err
	}
	for {
		u, err := s.Recv()
		if err == io.EOF {
			// The JobManager ended the stream without a terminal update:
			// it is stopping. Its successor answers the next Wait.
			return nil, progressed, status.Error(codes.Unavailable, "JobManager ended the update stream before the job ended")
		}
		if err != nil {
			return nil, progressed, err
		}
		progressed = true
		if onUpdate != nil {
			onUpdate(u)
		}
		if u.GetTerminal() {
			return u, true, nil
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

// callError turns an RPC error into one that names the cause and the fix.
func (c *Client) callError(op, job string, err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("%s: %w", op, err)
	}
	msg := st.Message()
	switch st.Code() {
	case codes.Unavailable:
		return c.unreachable(err)
	case codes.DeadlineExceeded:
		return fmt.Errorf("%s: JobManager at %s did not answer in time: %w", op, c.cfg.Address, err)
	case codes.FailedPrecondition:
		if strings.Contains(msg, "cluster protocol") {
			return fmt.Errorf("%s: JobManager at %s refused this client: %s: %w", op, c.cfg.Address, msg, ErrVersionMismatch)
		}
		return fmt.Errorf("%s: %s", op, msg)
	case codes.NotFound:
		if job == "" {
			return fmt.Errorf("%s: %s", op, msg)
		}
		return fmt.Errorf("%s: the JobManager at %s has no job %q (%s): `%s list --jobmanager %s` shows its jobs: %w",
			op, c.cfg.Address, job, msg, c.cfg.Command, c.cfg.Address, ErrUnknownJob)
	case codes.AlreadyExists:
		return fmt.Errorf("%s: the JobManager at %s already has it (%s): choose another --job-name, or cancel that job first (`%s cancel %s --jobmanager %s`)", op, c.cfg.Address, msg, c.cfg.Command, job, c.cfg.Address)
	case codes.Unimplemented:
		return fmt.Errorf("%s: the JobManager at %s does not serve this call (%s): run the same weir build in every role", op, c.cfg.Address, msg)
	}
	return fmt.Errorf("%s: %s", op, msg)
}

// unreachable is the error for a JobManager that cannot be reached.
func (c *Client) unreachable(last error) error {
	return &clientUnreachableError{addr: c.cfg.Address, command: c.cfg.Command, last: last}
}

// clientUnreachableError says that no JobManager answers at addr and how
// to start one; it wraps ErrJobManagerUnreachable and the last error.
type clientUnreachableError struct {
	addr, command string
	cause         error // what happened, if more than "not reachable"
	last          error
}

func (e *clientUnreachableError) Error() string {
	what := "no JobManager at " + e.addr
	if e.cause != nil {
		what = fmt.Sprintf("JobManager at %s %v", e.addr, e.cause)
	}
	return fmt.Sprintf("%s: start one with `%s jobmanager`, or check --jobmanager", what, e.command)
}

func (e *clientUnreachableError) Unwrap() []error { return []error{ErrJobManagerUnreachable, e.last} }
