package remote

import (
	"fmt"
	"net"
	"time"
)

// A TCP connection whose peer became unreachable (a partition, a host
// gone without closing its sockets) stays open for hours by the
// operating system's defaults: what was sent is retransmitted, an idle
// connection is never probed. Both ends of a data connection set:
//   - TCP_USER_TIMEOUT (Linux, tcp_user_timeout.go): data unacknowledged
//     for the timeout closes the connection;
//   - keepalive probes every quarter of the timeout after a quarter of
//     idleness, three unanswered ones closing it, so that an idle
//     connection (no credit, no data: a stalled pipeline) is noticed in
//     about the same time.
// The closed connection fails the channels on it, whose tasks fail, as
// when a peer closes it. A peer that is alive acknowledges at the TCP
// level whatever its tasks do, so backpressure never trips it.

// tcpUserTimeout is Linux's TCP_USER_TIMEOUT (linux/tcp.h), which package
// syscall does not name.
const tcpUserTimeout = 0x12

// setLiveness sets conn's keepalive and user timeout from timeout.
func setLiveness(conn net.Conn, timeout time.Duration) error {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return nil // not TCP (tests' pipes): nothing to set
	}
	q := max(timeout/4, time.Second)
	if err := tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: q, Interval: q, Count: 3}); err != nil {
		return fmt.Errorf("set keepalive: %w", err)
	}
	if err := setUserTimeout(tc, timeout); err != nil {
		return fmt.Errorf("set TCP_USER_TIMEOUT: %w", err)
	}
	return nil
}

// livenessListener sets liveness on every connection it accepts.
type livenessListener struct {
	net.Listener
	timeout time.Duration
}

func (l livenessListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if err := setLiveness(c, l.timeout); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("accepted connection from %s: %w", c.RemoteAddr(), err)
	}
	return c, nil
}
