// Package etcdtest runs a real single-node etcd server inside a test
// process (go.etcd.io/etcd/server/v3/embed), for the tests of internal/ha
// and of the code that uses it. Only tests may import it: it links the
// etcd server, which the weir binary must not carry.
package etcdtest

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Server is an embedded single-node etcd on loopback.
type Server struct {
	dir        string
	clientPort int
	peerPort   int

	mu sync.Mutex
	e  *embed.Etcd // nil while stopped
}

// Start runs an embedded single-node etcd on free loopback ports with its
// data in dir (t.TempDir() if ""), and waits until it serves. t.Cleanup
// stops it. Its election timeout is 100 ms, so leases as short as 1 s are
// granted as asked (etcd raises a TTL below 1.5 × the election timeout).
func Start(t testing.TB, dir string) *Server {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	s := &Server{dir: dir}
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if s.clientPort, s.peerPort, err = freePorts(); err != nil {
			continue
		}
		if err = s.start(); err == nil {
			t.Cleanup(s.Stop)
			return s
		}
		// Another process took a port between freePorts and the bind: pick
		// new ones. The data folder is fresh, so starting over is safe.
	}
	t.Fatalf("etcdtest: start embedded etcd in %s: %v", dir, err)
	return nil
}

// Endpoint is the client address, "127.0.0.1:port" (no scheme).
func (s *Server) Endpoint() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.clientPort))
}

// Dir is the server's data folder.
func (s *Server) Dir() string { return s.dir }

// Stop stops the server, as if etcd went away; clients see connection
// errors. It is idempotent.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.e == nil {
		return
	}
	s.e.Close()
	<-s.e.Server.StopNotify()
	s.e = nil
}

// Restart starts a stopped server again on the same ports with the same
// data folder, so its keys and revisions survive, and waits until it
// serves. It fails the test if the ports were taken meanwhile.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	var err error
	// A port just released may stay busy for a moment (a client's
	// reconnect racing the bind): retry briefly.
	for attempt := 0; attempt < 20; attempt++ {
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("etcdtest: restart embedded etcd on %s: %v", s.Endpoint(), err)
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.e != nil {
		return nil
	}
	cfg := embed.NewConfig()
	cfg.Name = "weir-test"
	cfg.Dir = s.dir
	cfg.WalDir = filepath.Join(s.dir, "wal")
	curl := url.URL{Scheme: "http", Host: s.Endpoint()}
	purl := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(s.peerPort))}
	cfg.ListenClientUrls = []url.URL{curl}
	cfg.AdvertiseClientUrls = []url.URL{curl}
	cfg.ListenPeerUrls = []url.URL{purl}
	cfg.AdvertisePeerUrls = []url.URL{purl}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.TickMs = 10
	cfg.ElectionMs = 100
	cfg.LogLevel = "error"
	// A logger that drops everything: the embedded server logs even at
	// "error" when it shuts down ("setting up serving from embedded etcd
	// failed" as its listeners close), which is noise in test output.
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return fmt.Errorf("embedded etcd failed while starting: %w", err)
	case <-time.After(30 * time.Second):
		e.Server.Stop()
		e.Close()
		return fmt.Errorf("embedded etcd not ready after 30 s")
	}
	s.e = e
	return nil
}

// freePorts picks two free loopback ports by listening on port 0. They
// are closed again before the server binds them, so another process may
// take one in between; Start retries then.
func freePorts() (client, peer int, err error) {
	var ports [2]int
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, 0, err
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports[0], ports[1], nil
}
