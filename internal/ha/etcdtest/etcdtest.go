// Package etcdtest runs a real single-node etcd server inside a test
// process (go.etcd.io/etcd/server/v3/embed), for the tests of internal/ha
// and of the code that uses it. Only tests may import it: it links the
// etcd server, which the weir binary must not carry.
package etcdtest

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"golang.org/x/crypto/bcrypt"
)

// Server is an embedded single-node etcd on loopback. Clients reach it
// through a TCP proxy on Endpoint, so that Stop can cut every connection
// at once, as a crash of etcd or a partition does (etcd's own shutdown
// drains client streams for up to 5 s first).
type Server struct {
	dir        string
	host       string // the proxy's address: loopback, or a test network's
	proxyPort  int    // Endpoint
	clientPort int    // etcd's own client port, behind the proxy
	peerPort   int

	mu    sync.Mutex
	e     *embed.Etcd  // nil while stopped
	ln    net.Listener // the proxy's; nil while stopped
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup // proxy goroutines
}

// Start runs an embedded single-node etcd on free loopback ports with its
// data in dir (t.TempDir() if ""), and waits until it serves. t.Cleanup
// stops it. Its election timeout is 100 ms, so leases as short as 1 s are
// granted as asked (etcd raises a TTL below 1.5 × the election timeout).
func Start(t testing.TB, dir string) *Server {
	t.Helper()
	return StartOn(t, dir, "127.0.0.1")
}

// StartOn is Start with the client proxy on host instead of loopback: an
// address of the test's own network, so that processes in other network
// namespaces reach etcd there and a test can cut them off it. etcd's own
// ports stay on loopback, behind the proxy.
func StartOn(t testing.TB, dir, host string) *Server {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	s := &Server{dir: dir, host: host}
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		var ports []int
		if ports, err = freePorts(3); err != nil {
			continue
		}
		s.proxyPort, s.clientPort, s.peerPort = ports[0], ports[1], ports[2]
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

// Endpoint is the client address, "host:port" (no scheme): loopback
// unless started with StartOn.
func (s *Server) Endpoint() string { return net.JoinHostPort(s.host, strconv.Itoa(s.proxyPort)) }

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// Dir is the server's data folder.
func (s *Server) Dir() string { return s.dir }

// Stop stops the server, as if etcd went away: every client connection
// is cut at once, then etcd shuts down. It is idempotent.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		s.ln.Close()
		s.ln = nil
		for c := range s.conns {
			c.Close()
		}
		s.conns = nil
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.mu.Lock()
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
	// No fsync: a test's etcd shares a loaded CI machine's disk with
	// brokers, databases and state backends, where an fsync can take
	// seconds; leases of 2 s then expire for etcd's own stalls, not for
	// the faults a test injects. Data still survives a restart of the
	// server process (the page cache holds it), which is what tests do.
	cfg.UnsafeNoFsync = true
	curl := url.URL{Scheme: "http", Host: loopback(s.clientPort)}
	purl := url.URL{Scheme: "http", Host: loopback(s.peerPort)}
	cfg.ListenClientUrls = []url.URL{curl}
	cfg.AdvertiseClientUrls = []url.URL{curl}
	cfg.ListenPeerUrls = []url.URL{purl}
	cfg.AdvertisePeerUrls = []url.URL{purl}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.TickMs = 10
	cfg.ElectionMs = 100
	// The cheapest password hashing: tests that enable auth stay fast.
	cfg.BcryptCost = uint(bcrypt.MinCost)
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
	ln, err := net.Listen("tcp", s.Endpoint())
	if err != nil {
		e.Close()
		return err
	}
	s.e, s.ln, s.conns = e, ln, map[net.Conn]struct{}{}
	s.wg.Add(1)
	go s.accept(ln)
	return nil
}

// accept forwards each connection to etcd's client port until ln closes.
func (s *Server) accept(ln net.Listener) {
	defer s.wg.Done()
	for {
		down, err := ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", loopback(s.clientPort))
		if err != nil {
			down.Close()
			continue
		}
		s.mu.Lock()
		if s.conns == nil { // stopping
			s.mu.Unlock()
			down.Close()
			up.Close()
			return
		}
		s.conns[down], s.conns[up] = struct{}{}, struct{}{}
		s.mu.Unlock()
		s.wg.Add(2)
		pipe := func(dst, src net.Conn) {
			defer s.wg.Done()
			io.Copy(dst, src)
			// Either side closing ends both directions.
			dst.Close()
			src.Close()
			s.mu.Lock()
			delete(s.conns, dst)
			delete(s.conns, src)
			s.mu.Unlock()
		}
		go pipe(up, down)
		go pipe(down, up)
	}
}

// freePorts picks n free loopback ports by listening on port 0. They are
// closed again before the server binds them, so another process may take
// one in between; Start retries then.
func freePorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}
