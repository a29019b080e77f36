package nats

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// testServer is an embedded nats-server with JetStream on file storage,
// which restart stops and starts again on the same port and folder.
type testServer struct {
	t    *testing.T
	opts *server.Options
	mu   sync.Mutex
	srv  *server.Server
	url  string
}

func newServer(t *testing.T) *testServer {
	t.Helper()
	return newServerWith(t, nil)
}

// newServerWith is newServer with the options changed by edit first.
func newServerWith(t *testing.T, edit func(*server.Options)) *testServer {
	t.Helper()
	ts := &testServer{t: t, opts: &server.Options{
		Host:      "127.0.0.1",
		Port:      server.RANDOM_PORT,
		JetStream: true,
		StoreDir:  filepath.Join(t.TempDir(), "js"),
		NoLog:     true,
		NoSigs:    true,
	}}
	if edit != nil {
		edit(ts.opts)
	}
	ts.start()
	if ts.srv == nil {
		t.FailNow()
	}
	// The next start takes the same port: clients reconnect to it.
	ts.opts.Port = ts.srv.Addr().(*net.TCPAddr).Port
	t.Cleanup(ts.stop)
	return ts
}

// start starts the server. It reports failures with t.Error (a test's
// restart goroutine calls it too); newServer fails the test on them.
func (ts *testServer) start() {
	ts.t.Helper()
	srv, err := server.NewServer(ts.opts)
	if err != nil {
		ts.t.Errorf("nats-server: %v", err)
		return
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		ts.t.Errorf("nats-server not ready in 10 s")
		srv.Shutdown()
		return
	}
	ts.mu.Lock()
	ts.srv, ts.url = srv, srv.ClientURL()
	ts.mu.Unlock()
}

func (ts *testServer) stop() {
	ts.mu.Lock()
	srv := ts.srv
	ts.srv = nil
	ts.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
}

// restart stops the server and starts it again from its files.
func (ts *testServer) restart() {
	ts.stop()
	ts.start()
}

// js connects a test client; the connection closes with the test.
func (ts *testServer) js(t *testing.T) (*natsgo.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := natsgo.Connect(ts.url, natsgo.MaxReconnects(-1), natsgo.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream: %v", err)
	}
	return nc, js
}

// createStream creates a file-storage stream.
func createStream(t *testing.T, js jetstream.JetStream, cfg jetstream.StreamConfig) jetstream.Stream {
	t.Helper()
	cfg.Storage = jetstream.FileStorage
	s, err := js.CreateStream(context.Background(), cfg)
	if err != nil {
		t.Fatalf("create stream %s: %v", cfg.Name, err)
	}
	return s
}

// publishN publishes payloads "<prefix><i>" for i in [from, to) to
// subject. It reports failures with t.Error, so that a watcher goroutine
// may call it too.
func publishN(t *testing.T, js jetstream.JetStream, subject, prefix string, from, to int) {
	t.Helper()
	// In chunks: the client stalls beyond 4000 unacknowledged messages.
	for ; from+1000 < to; from += 1000 {
		publishN(t, js, subject, prefix, from, from+1000)
	}
	var futures []jetstream.PubAckFuture
	for i := from; i < to; i++ {
		f, err := js.PublishAsync(subject, []byte(fmt.Sprintf("%s%d", prefix, i)))
		if err != nil {
			t.Errorf("publish: %v", err)
			return
		}
		futures = append(futures, f)
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			t.Errorf("publish: %v", err)
			return
		case <-time.After(10 * time.Second):
			t.Errorf("publish: no ack in 10 s")
			return
		}
	}
}

// readAll returns the payloads of every message of stream, sorted.
func readAll(t *testing.T, js jetstream.JetStream, stream string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatalf("stream %s: %v", stream, err)
	}
	n := s.CachedInfo().State.Msgs
	var out []string
	if n == 0 {
		return out
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	it, err := c.Messages()
	if err != nil {
		t.Fatalf("messages: %v", err)
	}
	defer it.Stop()
	for uint64(len(out)) < n {
		m, err := it.Next(jetstream.NextMaxWait(10 * time.Second))
		if err != nil {
			t.Fatalf("read %s after %d of %d: %v", stream, len(out), n, err)
		}
		out = append(out, string(m.Data()))
	}
	sort.Strings(out)
	return out
}
