package rest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"syscall"
	"time"
)

// ErrRemoteAddress is returned by Listen for an address other hosts could
// reach when remote access was not allowed.
var ErrRemoteAddress = errors.New("address is reachable from other hosts")

// ErrAddressInUse is returned by Listen when another process holds the
// address.
var ErrAddressInUse = errors.New("address is already in use")

// Listen opens the API's TCP listener on addr (HOST:PORT; port 0 picks a
// free one). The API can trigger checkpoints and has no authentication,
// so a host other than a loopback address (127.0.0.1, ::1, localhost) is
// refused with ErrRemoteAddress unless allowRemote is set; an empty host
// or 0.0.0.0 means every interface and counts as remote.
func Listen(addr string, allowRemote bool) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("rest api address %q: %w; want HOST:PORT, e.g. 127.0.0.1:8081", addr, err)
	}
	if !allowRemote && !isLoopback(host) {
		return nil, fmt.Errorf("rest api address %s: %w and the API has no authentication; listen on 127.0.0.1 or allow remote access explicitly", addr, ErrRemoteAddress)
	}
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("rest api address %s: %w (another weir or a Flink JobManager?); stop that process or choose another port", addr, ErrAddressInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("rest api address %s: %w", addr, err)
	}
	return ln, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Server is a running API server.
type Server struct {
	srv  *http.Server
	addr net.Addr
	done chan error
}

// Serve serves h on ln until Shutdown; serving errors are logged (logger
// nil: silent).
func Serve(ln net.Listener, h http.Handler, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		srv:  &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)},
		addr: ln.Addr(),
		done: make(chan error, 1),
	}
	go func() {
		err := s.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		if err != nil {
			logger.Error("rest api: serve", "addr", s.addr, "error", err)
		}
		s.done <- err
	}()
	return s
}

// Addr is the address the server listens on (with the port chosen for
// port 0).
func (s *Server) Addr() net.Addr { return s.addr }

// Shutdown stops accepting requests, waits for those in flight until ctx
// ends, and returns once the server goroutine has stopped.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	if serr := <-s.done; err == nil {
		err = serr
	}
	return err
}
