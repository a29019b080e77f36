package remote

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/weirstream/weir/internal/network/wire"
)

// ErrHandshake marks a connection refused during the handshake: another
// protocol version or build, the wrong peer, or bytes that are not a weir
// data connection.
var ErrHandshake = errors.New("network handshake failed")

// dialHandshake sends Hello to the peer expected behind nc and reads its
// HelloOK. The returned Reader may hold the first frames after it.
func dialHandshake(nc net.Conn, cfg *Config, peer string) (*wire.Reader, error) {
	_ = nc.SetDeadline(time.Now().Add(cfg.ConnectTimeout))
	defer func() { _ = nc.SetDeadline(time.Time{}) }()
	hello := wire.AppendHello(nil, wire.Hello, wire.HelloMsg{From: cfg.ResourceID, To: peer, BuildID: cfg.BuildID})
	if _, err := nc.Write(hello); err != nil {
		return nil, fmt.Errorf("send hello to %s at %s: %w", peer, nc.RemoteAddr(), err)
	}
	rd := wire.NewReader(nc, 0)
	f, err := rd.Next()
	if err != nil {
		return nil, fmt.Errorf("read hello answer of %s at %s: %w: %w", peer, nc.RemoteAddr(), err, ErrHandshake)
	}
	if f.Kind == wire.Error {
		return nil, fmt.Errorf("%s at %s refused the connection: %q: %w", peer, nc.RemoteAddr(), wire.DecodeError(f.Payload), ErrHandshake)
	}
	if f.Kind != wire.HelloOK {
		return nil, fmt.Errorf("%s at %s answered hello with a %s frame: %w", peer, nc.RemoteAddr(), f.Kind, ErrHandshake)
	}
	m, err := wire.DecodeHello(f.Kind, f.Payload)
	if err == nil {
		err = checkHello(m, cfg, peer)
	}
	if err != nil {
		_, _ = nc.Write(wire.AppendError(nil, 0, err.Error()))
		return nil, fmt.Errorf("%s at %s: %v: %w", peer, nc.RemoteAddr(), err, ErrHandshake)
	}
	return rd, nil
}

// acceptHandshake reads a dialer's Hello and answers HelloOK, or Error
// naming the reason before the caller closes nc.
func acceptHandshake(nc net.Conn, cfg *Config) (*wire.Reader, string, error) {
	_ = nc.SetDeadline(time.Now().Add(cfg.ConnectTimeout))
	defer func() { _ = nc.SetDeadline(time.Time{}) }()
	rd := wire.NewReader(nc, 0)
	f, err := rd.Next()
	if err == nil && f.Kind != wire.Hello {
		err = fmt.Errorf("first frame is %s, want hello", f.Kind)
	}
	var m wire.HelloMsg
	if err == nil {
		m, err = wire.DecodeHello(f.Kind, f.Payload)
	}
	if err == nil {
		err = checkHello(m, cfg, "")
	}
	if err != nil {
		_, _ = nc.Write(wire.AppendError(nil, 0, err.Error()))
		return nil, "", fmt.Errorf("connection from %s: %v: %w", nc.RemoteAddr(), err, ErrHandshake)
	}
	ok := wire.AppendHello(nil, wire.HelloOK, wire.HelloMsg{From: cfg.ResourceID, To: m.From, BuildID: cfg.BuildID})
	if _, err := nc.Write(ok); err != nil {
		return nil, "", fmt.Errorf("answer hello of %s at %s: %w", m.From, nc.RemoteAddr(), err)
	}
	return rd, m.From, nil
}

// checkHello checks the peer's greeting: it must be meant for us, from the
// expected peer (if known), of our build.
func checkHello(m wire.HelloMsg, cfg *Config, peer string) error {
	switch {
	case m.To != cfg.ResourceID:
		return fmt.Errorf("hello from %s meant for TaskManager %s, this is %s: a stale address of a replaced TaskManager", m.From, m.To, cfg.ResourceID)
	case peer != "" && m.From != peer:
		return fmt.Errorf("expected TaskManager %s, reached %s: a stale address of a replaced TaskManager", peer, m.From)
	case m.From == cfg.ResourceID:
		return fmt.Errorf("hello from %s, which is this TaskManager's own id", m.From)
	case m.BuildID != cfg.BuildID:
		return fmt.Errorf("TaskManager %s runs build %q, this one %q: run the same weir build in every role", m.From, m.BuildID, cfg.BuildID)
	}
	return nil
}
