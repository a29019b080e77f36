package ha

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weirstream/weir/internal/config"
)

// ErrNotLeader is wrapped by every fenced write made by a Leadership whose
// term is over: its election key is gone (lease expired or revoked,
// resigned) or another term's key replaced it.
var ErrNotLeader = errors.New("not the leader")

// ErrNoLeader is returned by Client.Leader when no process leads.
var ErrNoLeader = errors.New("no leader")

// ErrClosed is wrapped by calls on a closed Client.
var ErrClosed = errors.New("ha client closed")

// Client is a connection to etcd for one process. Its methods are safe
// for concurrent use.
type Client struct {
	cfg  Config
	keys keys
	cli  *clientv3.Client
	log  *slog.Logger

	// ctx ends when Close starts; background goroutines (Observe,
	// leadership monitors, abandoned campaigns) watch it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	leading map[*Leadership]struct{} // live terms, resigned by Close
}

// Connect dials etcd and checks, within cfg.DialTimeout, that it answers
// a read of this cluster's prefix with the configured credentials. Its
// errors name the endpoints and the key to fix: unreachable endpoints,
// bad credentials or missing permissions, TLS files or handshakes.
func Connect(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	k, err := newKeys(cfg.ClusterID)
	if err != nil {
		return nil, fmt.Errorf("ha: %s %q %w", config.HAClusterID, cfg.ClusterID, err)
	}
	tlsCfg, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &Client{cfg: cfg, keys: k, log: cfg.Logger, ctx: cctx, cancel: cancel, leading: map[*Leadership]struct{}{}}

	dctx, dcancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer dcancel()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		Username:    cfg.Username,
		Password:    cfg.Password,
		TLS:         tlsCfg,
		Context:     cctx,
		// gRPC pings find a dead connection (a partition without a reset)
		// for watches; etcd refuses pings more often than every 5 s.
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: cfg.DialTimeout,
		Logger:               zap.NewNop(),
	})
	if err != nil {
		cancel()
		return nil, c.connectError(err)
	}
	c.cli = cli
	// A read of the cluster's prefix: proves the endpoints answer, the
	// credentials hold and the user may read what the stores read.
	if _, err := cli.Get(dctx, k.root+"/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil {
		cli.Close()
		cancel()
		return nil, c.connectError(err)
	}
	c.log.Info("ha: connected to etcd", "endpoints", cfg.Endpoints, "root", k.root)
	return c, nil
}

// Root is the key prefix of this cluster, e.g. "/weir/default".
func (c *Client) Root() string { return c.keys.root }

// Config is the configuration the client was made with, defaults filled.
func (c *Client) Config() Config { return c.cfg }

// Close resigns every Leadership still live (revoking its lease, so a
// standby takes over at once; bounded by DialTimeout when etcd does not
// answer, the lease then expires by itself), ends Observe channels and
// closes the connection. It waits for every goroutine of the client.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	live := make([]*Leadership, 0, len(c.leading))
	for l := range c.leading {
		live = append(live, l)
	}
	c.mu.Unlock()

	var errs []error
	for _, l := range live {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.DialTimeout)
		if err := l.Resign(ctx); err != nil {
			errs = append(errs, err)
		}
		cancel()
	}
	c.cancel()
	if err := c.cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
		errs = append(errs, fmt.Errorf("ha: close etcd client: %w", err))
	}
	c.wg.Wait()
	return errors.Join(errs...)
}

// isClosed reports whether Close has started.
func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// tlsConfig loads the TLS files; nil when TLS is not used. https
// endpoints without a CA file trust the system's CAs.
func (c Config) tlsConfig() (*tls.Config, error) {
	https := false
	for _, e := range c.Endpoints {
		https = https || endpointScheme(e) == "https"
	}
	if !https && c.CAFile == "" && c.CertFile == "" {
		return nil, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("ha: %s: %w", config.HAEtcdTLSCAFile, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ha: %s %s holds no PEM certificate: give the CA certificate that signs the etcd servers'", config.HAEtcdTLSCAFile, c.CAFile)
		}
		t.RootCAs = pool
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("ha: %s %s with %s %s: %w", config.HAEtcdTLSCertFile, c.CertFile, config.HAEtcdTLSKeyFile, c.KeyFile, err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}

// connectError explains a failure to reach or use etcd at start.
func (c *Client) connectError(err error) error {
	eps := strings.Join(c.cfg.Endpoints, ", ")
	switch {
	case errors.Is(err, rpctypes.ErrAuthFailed), errors.Is(err, rpctypes.ErrInvalidAuthToken):
		return fmt.Errorf("ha: etcd at %s refused user %q: check %s and %s: %w",
			eps, c.cfg.Username, config.HAEtcdUsername, config.HAEtcdPassword, err)
	case errors.Is(err, rpctypes.ErrUserEmpty), errors.Is(err, rpctypes.ErrAuthOldRevision):
		return fmt.Errorf("ha: etcd at %s requires authentication: set %s and %s: %w",
			eps, config.HAEtcdUsername, config.HAEtcdPassword, err)
	case errors.Is(err, rpctypes.ErrPermissionDenied):
		who := fmt.Sprintf("user %q", c.cfg.Username)
		if c.cfg.Username == "" {
			who = fmt.Sprintf("a client without %s", config.HAEtcdUsername)
		}
		return fmt.Errorf("ha: etcd at %s denies %s access to %s/: grant the role of %s read and write on that prefix: %w",
			eps, who, c.keys.root, config.HAEtcdUsername, err)
	}
	msg := err.Error()
	if strings.Contains(msg, "x509") || strings.Contains(msg, "tls:") || strings.Contains(msg, "handshake") {
		return fmt.Errorf("ha: TLS with etcd at %s failed: check %s, %s and %s against the server's certificates and the endpoints' https:// scheme: %w",
			eps, config.HAEtcdTLSCAFile, config.HAEtcdTLSCertFile, config.HAEtcdTLSKeyFile, err)
	}
	if errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded || status.Code(err) == codes.Unavailable {
		hint := " (an etcd that serves TLS needs https:// endpoints)"
		if !c.plainEndpoints() {
			hint = fmt.Sprintf(" and, for https, that it serves TLS with a certificate %s trusts (%s and %s for client certificates)",
				config.HAEtcdTLSCAFile, config.HAEtcdTLSCertFile, config.HAEtcdTLSKeyFile)
		}
		return fmt.Errorf("ha: etcd at %s did not answer within %s: check that etcd runs there and that %s lists its client URLs%s: %w",
			eps, config.FormatDuration(c.cfg.DialTimeout), config.HAEtcdEndpoints, hint, err)
	}
	return fmt.Errorf("ha: etcd at %s (%s): %w", eps, config.HAEtcdEndpoints, err)
}

// plainEndpoints reports whether no endpoint says https.
func (c *Client) plainEndpoints() bool {
	for _, e := range c.cfg.Endpoints {
		if endpointScheme(e) == "https" {
			return false
		}
	}
	return true
}
