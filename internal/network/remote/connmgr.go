package remote

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/security"
)

// ConnManager keeps one Conn per peer TaskManager. Of two TaskManagers the
// one with the smaller ResourceID dials and the other waits for it, so a
// pair never opens two connections; either waits at most the connect
// timeout. It accepts connections on the TaskManager's data listener, and
// answers partition requests arriving on any connection from its
// PartitionRegistry.
type ConnManager struct {
	cfg Config
	ln  net.Listener
	reg *PartitionRegistry
	wg  sync.WaitGroup // the accept loop and handshakes
	// traffic counts the record data of every connection, past and
	// present.
	traffic Traffic

	mu      sync.Mutex
	conns   map[string]*Conn
	dialing map[string]bool
	changed chan struct{} // closed and replaced when conns or dialing change
	closed  bool
}

// NewConnManager starts accepting on ln (the TaskManager's --data-address;
// it takes ownership) and serves partition requests from reg (nil: a new
// registry with the connect timeout).
func NewConnManager(cfg Config, ln net.Listener, reg *PartitionRegistry) (*ConnManager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if reg == nil {
		reg = NewPartitionRegistry(cfg.ConnectTimeout)
	}
	if cfg.PeerTimeout > 0 {
		ln = livenessListener{Listener: ln, timeout: cfg.PeerTimeout}
	}
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS.Config)
	}
	m := &ConnManager{
		cfg:     cfg,
		ln:      ln,
		reg:     reg,
		conns:   make(map[string]*Conn),
		dialing: make(map[string]bool),
		changed: make(chan struct{}),
	}
	m.wg.Add(1)
	go m.acceptLoop()
	return m, nil
}

// Addr is the listener's address, for the TaskManager's registration.
func (m *ConnManager) Addr() net.Addr { return m.ln.Addr() }

// Registry is the partition registry requests are answered from.
func (m *ConnManager) Registry() *PartitionRegistry { return m.reg }

// Traffic returns the record data every connection of the manager carried
// so far, both ways.
func (m *ConnManager) Traffic() TrafficStats { return m.traffic.Stats() }

// Conn returns the connection to peer, reachable at addr: the existing one,
// one this side dials (smaller ResourceID), or the one the peer dials,
// waiting for it up to the connect timeout. The TaskExecutor calls it for
// every peer named in a deployment, inputs and outputs alike, so the
// dialing side always learns it should.
func (m *ConnManager) Conn(ctx context.Context, peer, addr string) (*Conn, error) {
	if peer == m.cfg.ResourceID {
		return nil, fmt.Errorf("connection to %s: that is this TaskManager; use a local channel", peer)
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.ConnectTimeout)
	defer cancel()
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, fmt.Errorf("connection to %s: %w", peer, ErrConnClosed)
		}
		if c := m.conns[peer]; c != nil {
			m.mu.Unlock()
			return c, nil
		}
		changed := m.changed
		dial := m.cfg.ResourceID < peer && !m.dialing[peer]
		if dial {
			m.dialing[peer] = true
		}
		m.mu.Unlock()
		if dial {
			c, err := m.dial(ctx, peer, addr)
			m.mu.Lock()
			delete(m.dialing, peer)
			if err == nil {
				if m.closed {
					err = fmt.Errorf("connection to %s: %w", peer, ErrConnClosed)
				} else {
					m.addLocked(c)
				}
			}
			m.notifyLocked()
			m.mu.Unlock()
			if err != nil {
				if c != nil {
					_ = c.Close()
				}
				return nil, err
			}
			return c, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			if m.cfg.ResourceID < peer {
				return nil, fmt.Errorf("connection to %s at %s: %w", peer, addr, ctx.Err())
			}
			return nil, fmt.Errorf("no connection from TaskManager %s (%s) within %v: it dials this one (smaller id); check that it runs and can reach %s: %w", peer, addr, m.cfg.ConnectTimeout, m.ln.Addr(), ctx.Err())
		}
	}
}

// Lookup returns the live connection to peer, nil if there is none; it
// never dials or waits.
func (m *ConnManager) Lookup(peer string) *Conn {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.conns[peer]
}

// dial connects to peer, retrying refused connections (the peer may still
// be starting) until ctx ends.
func (m *ConnManager) dial(ctx context.Context, peer, addr string) (*Conn, error) {
	var d net.Dialer
	backoff := 20 * time.Millisecond
	for {
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err == nil && m.cfg.PeerTimeout > 0 {
			if err = setLiveness(nc, m.cfg.PeerTimeout); err != nil {
				_ = nc.Close()
				return nil, fmt.Errorf("connection to TaskManager %s at %s: %w", peer, addr, err)
			}
		}
		if err == nil {
			if m.cfg.TLS != nil {
				tc := tls.Client(nc, security.ClientConfig(m.cfg.TLS.Config, addr))
				if herr := tc.HandshakeContext(ctx); herr != nil {
					_ = nc.Close()
					return nil, fmt.Errorf("connection to TaskManager %s: %w", peer, security.ClientError("TaskManager "+peer, addr, m.cfg.TLS.CAFile, herr))
				}
				nc = tc
			}
			rd, herr := dialHandshake(nc, &m.cfg, peer)
			if herr != nil {
				_ = nc.Close()
				if m.cfg.TLS != nil {
					herr = security.ClientError("TaskManager "+peer, addr, m.cfg.TLS.CAFile, herr)
				}
				return nil, herr
			}
			return newConn(nc, rd, m.cfg.ResourceID, peer, m.reg, &m.cfg, &m.traffic, m.remove), nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("dial TaskManager %s at %s for %v: %v: check its --data-address and that it runs", peer, addr, m.cfg.ConnectTimeout, err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

func (m *ConnManager) acceptLoop() {
	defer m.wg.Done()
	for {
		nc, err := m.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				m.cfg.Logger.Error("network: accept failed; no more connections are accepted", "addr", m.ln.Addr().String(), "err", err)
			}
			return
		}
		m.wg.Add(1)
		go m.accept(nc)
	}
}

func (m *ConnManager) accept(nc net.Conn) {
	defer m.wg.Done()
	if tc, ok := nc.(*tls.Conn); ok {
		ctx, cancel := context.WithTimeout(context.Background(), m.cfg.ConnectTimeout)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			level := slog.LevelError
			if security.IsEOF(err) {
				level = slog.LevelDebug // a port probe: connected and closed
			}
			m.cfg.Logger.Log(context.Background(), level, "network: refused a connection", "remote", nc.RemoteAddr().String(), "err", security.ServerError("TaskManager", nc.RemoteAddr().String(), m.cfg.TLS.CAFile, err))
			_ = nc.Close()
			return
		}
	}
	rd, peer, err := acceptHandshake(nc, &m.cfg)
	if err != nil {
		m.cfg.Logger.Error("network: refused a connection", "remote", nc.RemoteAddr().String(), "err", err)
		_ = nc.Close()
		return
	}
	if peer > m.cfg.ResourceID {
		m.cfg.Logger.Warn("network: accepted a connection from a peer with a larger id, which should wait to be dialed", "peer", peer)
	}
	c := newConn(nc, rd, m.cfg.ResourceID, peer, m.reg, &m.cfg, &m.traffic, m.remove)
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		_ = c.Close()
		return
	}
	old := m.conns[peer]
	m.addLocked(c)
	m.notifyLocked()
	m.mu.Unlock()
	if old != nil {
		// The peer dialed anew: it lost the old connection (restart).
		_ = old.Close()
	}
}

func (m *ConnManager) addLocked(c *Conn) { m.conns[c.peer] = c }

func (m *ConnManager) notifyLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// remove forgets a failed connection, so the next Conn call reconnects.
func (m *ConnManager) remove(c *Conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conns[c.peer] == c {
		delete(m.conns, c.peer)
	}
}

// Close stops accepting, closes every connection (their channels fail) and
// the registry, and waits for all goroutines.
func (m *ConnManager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	conns := make([]*Conn, 0, len(m.conns))
	for _, c := range m.conns {
		conns = append(conns, c)
	}
	m.notifyLocked()
	m.mu.Unlock()
	err := m.ln.Close()
	m.wg.Wait()
	for _, c := range conns {
		_ = c.Close()
	}
	m.reg.Close()
	return err
}
