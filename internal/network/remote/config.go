package remote

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/weirstream/weir/internal/security"
)

// Config configures a ConnManager and everything it creates.
type Config struct {
	// ResourceID names this TaskManager (e.g. "tm-3f9c1a"). Of two
	// TaskManagers the one with the smaller ResourceID dials. Required.
	ResourceID string
	// BuildID identifies this executable; peers with another build are
	// refused, so two different binaries never exchange records.
	BuildID string
	// ConnectTimeout bounds dialing or waiting for a peer's connection, the
	// handshake, and how long a partition request waits for its producer to
	// be deployed (taskmanager.network.connect-timeout). Default 30s.
	ConnectTimeout time.Duration
	// SegmentSize is the initial size of send and receive buffers
	// (taskmanager.memory.segment-size). Default 32 KiB. A batch that
	// encodes larger travels in one larger buffer.
	SegmentSize int
	// TLS, if set, secures every connection with mutual TLS
	// (security.ssl.internal.*): the listener requires and verifies the
	// peer's certificate, dials verify the peer's against the address's
	// host. A refused handshake is logged or returned naming the keys.
	// nil is plain TCP.
	TLS *security.Internal
	// PeerTimeout bounds how long a connection may go without a sign of
	// life from the peer (heartbeat.timeout in a TaskManager): what was
	// sent stays unacknowledged, or an idle connection's keepalive probes
	// go unanswered. The connection is then closed as broken, so that a
	// partition between two TaskManagers fails the tasks whose channels
	// cross it (and the job fails over) instead of stalling them until
	// the checkpoint timeout. 0 leaves the operating system's defaults
	// (hours).
	PeerTimeout time.Duration
	// Logger receives connection failures and malformed frames; nil is
	// silent.
	Logger *slog.Logger
}

// DefaultConnectTimeout and DefaultSegmentSize are Config's defaults, as in
// Flink.
const (
	DefaultConnectTimeout = 30 * time.Second
	DefaultSegmentSize    = 32 << 10
)

// closeGrace bounds writing the Error frame that announces a close: a peer
// that stopped reading must not keep the connection half-open.
const closeGrace = time.Second

// Validate fills defaults and reports the first invalid field.
func (c *Config) Validate() error {
	if c.ResourceID == "" {
		return fmt.Errorf("network config: empty ResourceID: every TaskManager needs its own id")
	}
	if c.ConnectTimeout < 0 || c.SegmentSize < 0 || c.PeerTimeout < 0 {
		return fmt.Errorf("network config: negative connect timeout %v, segment size %d or peer timeout %v", c.ConnectTimeout, c.SegmentSize, c.PeerTimeout)
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.SegmentSize == 0 {
		c.SegmentSize = DefaultSegmentSize
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}
