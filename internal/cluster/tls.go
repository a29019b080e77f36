package cluster

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/weirstream/weir/internal/security"
)

// TLS is the mutual TLS of the JobManager's RPC
// (security.ssl.internal.*): nil in a config means plain TCP.
type TLS = security.Internal

// serverTLSOption returns the gRPC server option that serves with t
// (requiring and verifying client certificates) and logs every refused
// handshake with the key the peer must set; none when t is nil.
func serverTLSOption(t *TLS, log *slog.Logger) []grpc.ServerOption {
	if t == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.Creds(&serverTLS{TransportCredentials: credentials.NewTLS(t.Config), caFile: t.CAFile, log: log})}
}

type serverTLS struct {
	credentials.TransportCredentials
	caFile string
	log    *slog.Logger
}

func (s *serverTLS) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := s.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		level := slog.LevelError
		if security.IsEOF(err) {
			level = slog.LevelDebug // a port probe: connected and closed
		}
		err = security.ServerError("TaskManager or client", raw.RemoteAddr().String(), s.caFile, err)
		s.log.Log(context.Background(), level, "JobManager rpc: refused a connection", "error", err)
	}
	return conn, info, err
}

func (s *serverTLS) Clone() credentials.TransportCredentials {
	return &serverTLS{TransportCredentials: s.TransportCredentials.Clone(), caFile: s.caFile, log: s.log}
}

// dialCreds are the transport credentials of one connection to the
// JobManager at addr: TLS with t, or plain TCP when t is nil. They keep
// the first failure that explains a refused handshake (failure).
type dialCreds struct {
	credentials.TransportCredentials
	addr   string
	caFile string
	tls    bool

	mu     sync.Mutex
	failed error
	plain  int // plain connections closed unanswered
}

// plainRefusals is how many plain connections in a row a JobManager must
// close unanswered before a client takes it for a TLS server and gives
// up: one could be a JobManager stopping.
const plainRefusals = 3

func newDialCreds(t *TLS, addr string) *dialCreds {
	if t == nil {
		return &dialCreds{TransportCredentials: insecure.NewCredentials(), addr: addr}
	}
	return &dialCreds{TransportCredentials: credentials.NewTLS(security.ClientConfig(t.Config, addr)), addr: addr, caFile: t.CAFile, tls: true}
}

func (c *dialCreds) option() grpc.DialOption { return grpc.WithTransportCredentials(c) }

func (c *dialCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err != nil {
		if c.tls {
			err = security.ClientError("JobManager", c.addr, c.caFile, err)
			c.record(err)
		}
		return nil, nil, err
	}
	return &explainConn{Conn: conn, c: c}, info, nil
}

func (c *dialCreds) Clone() credentials.TransportCredentials { return c }

func (c *dialCreds) record(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failed == nil {
		c.failed = err
	}
}

// failure is the explained reason of a refused handshake, or nil: with
// TLS an error wrapping security.ErrHandshake; without, a hint that the
// JobManager closed the connection unanswered (it may require TLS).
func (c *dialCreds) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failed
}

// final is failure when no retry can help: a refused TLS handshake, or
// plainRefusals plain connections closed unanswered.
func (c *dialCreds) final() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if errors.Is(c.failed, security.ErrHandshake) || c.plain >= plainRefusals {
		return c.failed
	}
	return nil
}

// explainConn explains the errors of a connection's first read: a server
// that refuses this side's certificate says so with an alert after the
// client finished its part of the handshake (TLS 1.3), and a TLS server
// closes a plain connection without a word.
type explainConn struct {
	net.Conn
	c    *dialCreds
	read bool
}

func (e *explainConn) Read(p []byte) (int, error) {
	n, err := e.Conn.Read(p)
	if err != nil && !e.read {
		if e.c.tls {
			if x := security.ClientError("JobManager", e.c.addr, e.c.caFile, err); x != err {
				e.c.record(x)
				err = x
			}
		} else if security.IsEOF(err) || isReset(err) {
			x := &plainRefusedError{hint: security.PlainHint("JobManager", e.c.addr), err: err}
			e.c.record(x)
			e.c.mu.Lock()
			e.c.plain++
			e.c.mu.Unlock()
			err = x
		}
	}
	if n > 0 {
		e.read = true
	}
	return n, err
}

// plainRefusedError is a plain connection the JobManager closed before
// answering.
type plainRefusedError struct {
	hint string
	err  error
}

func (e *plainRefusedError) Error() string { return e.hint + ": " + e.err.Error() }
func (e *plainRefusedError) Unwrap() error { return e.err }

func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }

// isPlainRefused reports a plain connection the JobManager closed
// unanswered.
func isPlainRefused(err error) bool {
	var p *plainRefusedError
	return errors.As(err, &p)
}
