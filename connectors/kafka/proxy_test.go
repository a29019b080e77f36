package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/internal/kafkatest"
)

// proxy is an in-process TCP proxy in front of one broker. The broker
// listens on a hidden port but advertises the proxy's (the listener kfake
// gets from kfake.ListenFn reports the proxy's address; a real broker's
// advertised.listeners names it), so every client,
// seeded or redirected by metadata, talks to the broker through the proxy.
// The proxy reads the client's requests frame by frame (4-byte length, then
// the request header: api key, version, correlation id, client id) and
// can cut a connection at a chosen request:
//
//	cutAfter   forward the request, then close the client's side at once
//	           and drop the broker's answer: the broker acts on the request,
//	           the client sees a connection error and cannot know the outcome
//	dropBefore close both sides without forwarding: the broker never sees it
//
// The broker's responses are framed too, so that a cutAfter waits for the
// answer to the cut request (matched by correlation id) before it reports
// the cut as done: by then the broker has acted on the request.
type proxy struct {
	t       testing.TB
	front   net.Listener
	backend string
	wg      sync.WaitGroup

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
	rule   *cutRule
	ends   []endTxnSeen  // every EndTxn request the proxy forwarded or cut
	paused chan struct{} // non-nil while paused: requests wait for its close
}

// cutMode says what a cut does with the request it matches.
type cutMode int

const (
	cutAfter cutMode = iota
	dropBefore
)

// cutRule cuts the connection of the next n EndTxn requests that match.
type cutRule struct {
	mode   cutMode
	txnID  string
	commit bool
	n      int
	done   chan struct{} // closed once n cuts happened (cutAfter: answered)
}

// endTxnSeen is an EndTxn request as the proxy saw it.
type endTxnSeen struct {
	TxnID  string
	Commit bool
	Epoch  int16
	Cut    bool // the proxy cut the connection at this request
}

func (e endTxnSeen) String() string {
	return fmt.Sprintf("EndTxn(%s commit=%v epoch=%d cut=%v)", e.TxnID, e.Commit, e.Epoch, e.Cut)
}

// apiKeyEndTxn is EndTxn's Kafka api key.
const apiKeyEndTxn = 26

// newProxiedBroker starts a broker of one node behind a proxy: a kfake
// cluster, or in the real-broker pass (WEIR_KAFKA_BROKERS set) a real
// Apache Kafka broker of the test's own (internal/kafkatest) that
// advertises the proxy's address to clients and keeps its own traffic
// (transaction markers) on a listener the proxy does not see.
func newProxiedBroker(t testing.TB, opts ...kfake.Opt) (*broker, *proxy) {
	t.Helper()
	if os.Getenv("WEIR_KAFKA_BROKERS") != "" {
		front, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		real := kafkatest.Start(t, kafkatest.Advertise(front.Addr().String()))
		p := newProxy(t, front, real.ListenAddr())
		t.Cleanup(p.close)
		return &broker{addrs: real.Addrs(), real: true}, p
	}
	var p *proxy
	listen := func(network, address string) (net.Listener, error) {
		if p != nil {
			return nil, errors.New("proxy: one broker only")
		}
		inner, err := net.Listen(network, address)
		if err != nil {
			return nil, err
		}
		front, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			inner.Close()
			return nil, err
		}
		p = newProxy(t, front, inner.Addr().String())
		return &advertised{Listener: inner, p: p}, nil
	}
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.ListenFn(listen)}, opts...)...)
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close) // closes the listener, and with it the proxy
	return &broker{addrs: c.ListenAddrs()}, p
}

// newProxy starts a proxy that accepts on front and forwards to backend.
func newProxy(t testing.TB, front net.Listener, backend string) *proxy {
	p := &proxy{t: t, front: front, backend: backend, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p
}

// advertised is kfake's listener, reporting the proxy's address.
type advertised struct {
	net.Listener
	p *proxy
}

func (a *advertised) Addr() net.Addr { return a.p.front.Addr() }

func (a *advertised) Close() error {
	err := a.Listener.Close()
	a.p.close()
	return err
}

// cut arms a rule: the next n EndTxn requests for txnID with this commit
// flag have their connection cut. The returned channel is closed after the
// n-th cut (for cutAfter: once the broker answered it).
func (p *proxy) cut(mode cutMode, txnID string, commit bool, n int) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rule = &cutRule{mode: mode, txnID: txnID, commit: commit, n: n, done: make(chan struct{})}
	return p.rule.done
}

// pause holds every request until resume; connections stay up.
func (p *proxy) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused == nil {
		p.paused = make(chan struct{})
	}
}

func (p *proxy) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused != nil {
		close(p.paused)
		p.paused = nil
	}
}

// endTxns returns the EndTxn requests seen so far.
func (p *proxy) endTxns() []endTxnSeen {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]endTxnSeen(nil), p.ends...)
}

func (p *proxy) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.front.Close()
	for c := range p.conns {
		c.Close()
	}
	if p.paused != nil {
		close(p.paused)
		p.paused = nil
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// track registers a connection to close with the proxy; false if closed.
func (p *proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		c.Close()
	}
}

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.front.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.backend)
		if err != nil {
			client.Close()
			continue
		}
		if !p.track(client, server) {
			client.Close()
			server.Close()
			return
		}
		pc := &proxyConn{p: p, client: client, server: server, answered: map[int32]chan struct{}{}}
		p.wg.Add(2)
		go pc.requests()
		go pc.responses()
	}
}

// proxyConn is one client connection and its connection to the broker.
type proxyConn struct {
	p              *proxy
	client, server net.Conn

	mu       sync.Mutex
	dropping bool                    // a cut happened: no response reaches the client
	answered map[int32]chan struct{} // correlation ids of cut requests -> closed when answered
}

// readFrame reads one size-prefixed Kafka frame.
func readFrame(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > 64<<20 {
		return nil, fmt.Errorf("proxy: frame of %d bytes", size)
	}
	frame := make([]byte, 4+size)
	copy(frame, n[:])
	_, err := io.ReadFull(r, frame[4:])
	return frame, err
}

// requests forwards the client's requests, cutting where the rule says.
func (c *proxyConn) requests() {
	defer c.p.wg.Done()
	defer c.p.untrack(c.client)
	for {
		frame, err := readFrame(c.client)
		if err != nil {
			c.p.untrack(c.server)
			return
		}
		c.p.mu.Lock()
		paused := c.p.paused
		c.p.mu.Unlock()
		if paused != nil {
			<-paused
		}
		cut, rule := c.inspect(frame)
		if cut && rule.mode == dropBefore {
			c.p.untrack(c.client, c.server)
			c.p.ruleDone(rule)
			return
		}
		if cut {
			// Responses from here on are dropped; the one to this request
			// tells that the broker acted on it.
			corr := int32(binary.BigEndian.Uint32(frame[8:12]))
			answered := make(chan struct{})
			c.mu.Lock()
			c.dropping = true
			c.answered[corr] = answered
			c.mu.Unlock()
			if _, err := c.server.Write(frame); err != nil {
				c.p.untrack(c.server)
				return
			}
			c.client.Close() // the client sees the connection die now
			go func() {
				<-answered
				c.p.untrack(c.server)
				c.p.ruleDone(rule)
			}()
			return
		}
		if _, err := c.server.Write(frame); err != nil {
			c.p.untrack(c.server)
			return
		}
	}
}

// inspect records an EndTxn request and says whether the rule cuts it.
func (c *proxyConn) inspect(frame []byte) (bool, *cutRule) {
	if len(frame) < 12 || int16(binary.BigEndian.Uint16(frame[4:6])) != apiKeyEndTxn {
		return false, nil
	}
	req, err := parseEndTxn(frame)
	if err != nil {
		c.p.t.Errorf("proxy: %v", err)
		return false, nil
	}
	seen := endTxnSeen{TxnID: req.TransactionalID, Commit: req.Commit, Epoch: req.ProducerEpoch}
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	r := c.p.rule
	if r != nil && r.n > 0 && r.txnID == req.TransactionalID && r.commit == req.Commit {
		r.n--
		seen.Cut = true
	}
	c.p.ends = append(c.p.ends, seen)
	return seen.Cut, r
}

// ruleDone counts a finished cut; the rule's channel closes at the last.
func (p *proxy) ruleDone(r *cutRule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.n == 0 && r.done != nil {
		close(r.done)
		r.done = nil
	}
}

// responses forwards the broker's responses, or drops them after a cut.
func (c *proxyConn) responses() {
	defer c.p.wg.Done()
	for {
		frame, err := readFrame(c.server)
		if err != nil {
			c.mu.Lock()
			for _, ch := range c.answered {
				close(ch) // the broker closed: nothing more will come
			}
			c.answered = map[int32]chan struct{}{}
			c.mu.Unlock()
			c.p.untrack(c.client)
			return
		}
		c.mu.Lock()
		dropping := c.dropping
		if len(frame) >= 8 {
			corr := int32(binary.BigEndian.Uint32(frame[4:8]))
			if ch, ok := c.answered[corr]; ok {
				close(ch)
				delete(c.answered, corr)
			}
		}
		c.mu.Unlock()
		if dropping {
			continue
		}
		if _, err := c.client.Write(frame); err != nil {
			continue // the client went away; drain until the broker closes
		}
	}
}

// parseEndTxn decodes an EndTxn request frame: size, request header (api
// key, version, correlation id, nullable client id, and tagged fields from
// version 3, the first flexible one), body.
func parseEndTxn(frame []byte) (*kmsg.EndTxnRequest, error) {
	b := frame[4:]
	version := int16(binary.BigEndian.Uint16(b[2:4]))
	b = b[8:]
	if len(b) < 2 {
		return nil, errors.New("EndTxn: short header")
	}
	if n := int16(binary.BigEndian.Uint16(b)); n > 0 {
		b = b[2+int(n):]
	} else {
		b = b[2:]
	}
	req := kmsg.NewPtrEndTxnRequest()
	req.SetVersion(version)
	if req.IsFlexible() {
		tags, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errors.New("EndTxn: bad header tags")
		}
		b = b[n:]
		for range tags {
			_, n := binary.Uvarint(b) // tag
			if n <= 0 {
				return nil, errors.New("EndTxn: bad header tag")
			}
			b = b[n:]
			size, m := binary.Uvarint(b)
			if m <= 0 || uint64(len(b)-m) < size {
				return nil, errors.New("EndTxn: bad header tag size")
			}
			b = b[m+int(size):]
		}
	}
	if err := req.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("EndTxn v%d: %w", version, err)
	}
	return req, nil
}
