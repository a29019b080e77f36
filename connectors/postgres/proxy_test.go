package postgres

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// cutProxy is a TCP proxy in front of the test server that understands
// enough of the frontend protocol to cut a connection at a chosen
// statement, the way a network failure would:
//
//   - cutBefore: the client's message is dropped and the connection cut;
//     the server never sees the statement.
//   - cutAfter: the message is forwarded, the server's answer is withheld
//     until the server has sent ReadyForQuery (the statement ran to its
//     end), and then the connection is cut: the client only sees the
//     connection drop.
//
// It also can refuse connections (accept and close at once), as an
// unreachable or restarting server would.
//
// Frontend messages after the startup packet are a type byte, a 4-byte
// big-endian length (itself included) and the body. The statement's text
// is in 'Q' (simple query: the SQL, NUL-terminated; pgx uses it for Exec
// without arguments, which is how the sink sends COMMIT PREPARED) and 'P'
// (Parse of the extended protocol: statement name, NUL, SQL, NUL, …);
// both are matched. The startup packet has no type byte; SSLRequest and
// GSSENCRequest come before it and get a one-byte answer, and the tests
// use sslmode=disable anyway.
type cutProxy struct {
	t      testing.TB
	ln     net.Listener
	target string

	mu     sync.Mutex
	rules  []*cutRule
	refuse bool
	conns  map[net.Conn]bool
	cuts   []string // the statements cut, in order
	wg     sync.WaitGroup
	closed bool
}

// cutMode says where a rule cuts the connection.
type cutMode int

const (
	cutBefore cutMode = iota // drop the statement, then cut
	cutAfter                 // forward it, let it run, drop the answer, cut
)

// cutRule cuts the connection at the next times statements containing
// needle.
type cutRule struct {
	needle string
	mode   cutMode
	times  int
	// then runs under the proxy's lock right after a cut (for example to
	// start refusing connections).
	then func(p *cutProxy)
}

// newCutProxy starts a proxy to the test server, closed at the end of the
// test.
func newCutProxy(t testing.TB) *cutProxy {
	t.Helper()
	u, err := url.Parse(testConnString())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{t: t, ln: ln, target: u.Host, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// connString is the test server's connection string with the proxy's
// address, TLS off (the proxy reads the stream in clear).
func (p *cutProxy) connString() string {
	u, err := url.Parse(testConnString())
	if err != nil {
		p.t.Fatal(err)
	}
	u.Host = p.ln.Addr().String()
	q := u.Query()
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()
	return u.String()
}

// addr is the proxy's host:port.
func (p *cutProxy) addr() string { return p.ln.Addr().String() }

// arm adds a rule.
func (p *cutProxy) arm(r cutRule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.times == 0 {
		r.times = 1
	}
	p.rules = append(p.rules, &r)
}

// setRefuse makes the proxy refuse (true) or forward new connections.
func (p *cutProxy) setRefuse(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = on
}

// cutStatements returns the statements cut so far.
func (p *cutProxy) cutStatements() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.cuts...)
}

func (p *cutProxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

func (p *cutProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.refuse || p.closed {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c] = true
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(c)
	}
}

// track registers c for close; it reports false (and closes c) when the
// proxy is closing.
func (p *cutProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = true
	return true
}

func (p *cutProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		c.Close()
		delete(p.conns, c)
	}
}

// match returns the rule a statement triggers, consuming one of its
// times, or nil.
func (p *cutProxy) match(sql string) *cutRule {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.rules {
		if r.times > 0 && strings.Contains(sql, r.needle) {
			r.times--
			return r
		}
	}
	return nil
}

// didCut records a cut and runs the rule's follow-up.
func (p *cutProxy) didCut(r *cutRule, sql string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cuts = append(p.cuts, sql)
	if r.then != nil {
		r.then(p)
	}
}

// serve proxies one client connection.
func (p *cutProxy) serve(client net.Conn) {
	defer p.wg.Done()
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil || !p.track(server) {
		p.untrack(client)
		return
	}
	defer p.untrack(client, server)

	// withhold is set before a cutAfter statement is forwarded; from then
	// on the server's bytes are not passed on. A Read that returns after
	// it is set can only hold bytes the server sent after the statement:
	// the statement had not been sent before. answered is closed once the
	// withheld bytes end with ReadyForQuery.
	var withhold atomic.Bool
	answered := make(chan struct{})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer client.Close()
		buf := make([]byte, 32<<10)
		var held []byte
		for {
			n, err := server.Read(buf)
			if n > 0 {
				if withhold.Load() {
					held = append(held, buf[:n]...)
					if endsWithReadyForQuery(held) {
						close(answered)
						return
					}
				} else if _, err := client.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()

	r := bufio.NewReader(client)
	startup := true
	for {
		typ, msg, err := readFrontend(r, startup)
		if err != nil {
			return
		}
		if startup {
			// SSLRequest and GSSENCRequest precede the startup packet.
			code := binary.BigEndian.Uint32(msg[4:8])
			startup = code == 80877103 || code == 80877104
		}
		if sql, ok := statementText(typ, msg); ok {
			if rule := p.match(sql); rule != nil {
				if rule.mode == cutAfter {
					withhold.Store(true)
					if _, err := server.Write(msg); err != nil {
						return
					}
					select {
					case <-answered:
					case <-time.After(10 * time.Second):
						p.t.Errorf("proxy: no answer to %q within 10 s", sql)
					}
				}
				p.didCut(rule, sql)
				return // the deferred untrack cuts both sides
			}
		}
		if _, err := server.Write(msg); err != nil {
			return
		}
	}
}

// readFrontend reads one frontend message whole (type byte included);
// during startup the message has no type byte.
func readFrontend(r *bufio.Reader, startup bool) (typ byte, msg []byte, err error) {
	var head []byte
	if startup {
		head = make([]byte, 4)
	} else {
		head = make([]byte, 5)
	}
	if _, err := io.ReadFull(r, head); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(head[len(head)-4:])
	if n < 4 || n > 1<<30 {
		return 0, nil, fmt.Errorf("bad message length %d", n)
	}
	msg = make([]byte, len(head)+int(n)-4)
	copy(msg, head)
	if _, err := io.ReadFull(r, msg[len(head):]); err != nil {
		return 0, nil, err
	}
	if !startup {
		typ = head[0]
	}
	return typ, msg, nil
}

// statementText returns the SQL of a Query or Parse message.
func statementText(typ byte, msg []byte) (string, bool) {
	body := msg[5:]
	switch typ {
	case 'Q':
		sql, _, _ := bytes.Cut(body, []byte{0})
		return string(sql), true
	case 'P':
		_, rest, ok := bytes.Cut(body, []byte{0}) // statement name
		if !ok {
			return "", false
		}
		sql, _, _ := bytes.Cut(rest, []byte{0})
		return string(sql), true
	}
	return "", false
}

// endsWithReadyForQuery reports whether b ends with a ReadyForQuery
// message: 'Z', length 5, and the transaction status (I, T or E).
func endsWithReadyForQuery(b []byte) bool {
	if len(b) < 6 {
		return false
	}
	t := b[len(b)-6:]
	return t[0] == 'Z' && binary.BigEndian.Uint32(t[1:5]) == 5 && bytes.IndexByte([]byte("ITE"), t[5]) >= 0
}
