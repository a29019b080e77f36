package ha

import (
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/config"
)

// Config is the HA configuration of a process.
type Config struct {
	// Endpoints are etcd client URLs: host:port or http(s)://host:port.
	Endpoints []string
	// ClusterID namespaces every key ("/default" if empty); see the
	// package doc for the layout.
	ClusterID string
	// StorageDir is the shared storage for job data and checkpoints under
	// HA (a path or URL the checkpoint storage accepts). This package
	// only carries it; etcd holds pointers into it.
	StorageDir string
	// Username and Password authenticate to an etcd with auth enabled;
	// both or neither.
	Username, Password string
	// CAFile, CertFile and KeyFile are PEM files for https endpoints:
	// the CAs to trust (empty: the system's) and a client certificate
	// with its key (both or neither).
	CAFile, CertFile, KeyFile string
	// LeaseTTL is the leader lease (rounded up to whole seconds, at least
	// 1 s): a leader that cannot renew it for this long steps down.
	LeaseTTL time.Duration
	// DialTimeout bounds Connect's check that etcd answers, and the
	// revocation of leases in Close.
	DialTimeout time.Duration
	// Logger receives leadership changes and etcd trouble; nil is silent.
	Logger *slog.Logger
}

// Defaults used when a Config field is zero.
const (
	DefaultClusterID   = "/default"
	DefaultLeaseTTL    = 10 * time.Second
	DefaultDialTimeout = 5 * time.Second
)

// FromConfig reads the high-availability.* keys; enabled is false for
// type NONE (cfg is then zero and err nil). Errors name the key and the
// fix.
func FromConfig(c *config.Config) (cfg Config, enabled bool, err error) {
	if c.String(config.HAType) != config.HATypeEtcd {
		return Config{}, false, nil
	}
	cfg = Config{
		ClusterID:   c.String(config.HAClusterID),
		StorageDir:  c.String(config.HAStorageDir),
		Username:    c.String(config.HAEtcdUsername),
		Password:    c.String(config.HAEtcdPassword),
		CAFile:      c.String(config.HAEtcdTLSCAFile),
		CertFile:    c.String(config.HAEtcdTLSCertFile),
		KeyFile:     c.String(config.HAEtcdTLSKeyFile),
		LeaseTTL:    c.Duration(config.HAEtcdLeaseTTL),
		DialTimeout: c.Duration(config.HAEtcdDialTimeout),
	}
	for _, e := range strings.Split(c.String(config.HAEtcdEndpoints), ",") {
		if e = strings.TrimSpace(e); e != "" {
			cfg.Endpoints = append(cfg.Endpoints, e)
		}
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, true, err
	}
	return cfg, true, nil
}

// Validate checks c; its errors name the configuration key to fix. Zero
// ClusterID, LeaseTTL and DialTimeout are valid: they mean the defaults.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("ha: "+format, args...))
	}
	if len(c.Endpoints) == 0 {
		bad("%s is empty: list the etcd client URLs, e.g. 127.0.0.1:2379 or https://etcd-0:2379,https://etcd-1:2379 (%s is etcd)",
			config.HAEtcdEndpoints, config.HAType)
	}
	schemes := map[string]bool{}
	for _, e := range c.Endpoints {
		if err := config.CheckEtcdEndpoint(e); err != nil {
			bad("%s: %v", config.HAEtcdEndpoints, err)
			continue
		}
		schemes[endpointScheme(e)] = true
	}
	if schemes["http"] && schemes["https"] {
		bad("%s mixes http:// and https:// endpoints: use one scheme for all", config.HAEtcdEndpoints)
	}
	if c.ClusterID != "" {
		if _, err := normalizeClusterID(c.ClusterID); err != nil {
			bad("%s %q %v", config.HAClusterID, c.ClusterID, err)
		}
	}
	if (c.Username == "") != (c.Password == "") {
		bad("set %s and %s together (etcd authenticates with both)", config.HAEtcdUsername, config.HAEtcdPassword)
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		bad("set %s and %s together (a client certificate needs its key)", config.HAEtcdTLSCertFile, config.HAEtcdTLSKeyFile)
	}
	if c.LeaseTTL != 0 && c.LeaseTTL < time.Second {
		bad("%s %v is below 1 s: etcd leases count whole seconds", config.HAEtcdLeaseTTL, c.LeaseTTL)
	}
	if c.DialTimeout < 0 {
		bad("%s %v is negative", config.HAEtcdDialTimeout, c.DialTimeout)
	}
	return errors.Join(errs...)
}

// ValidateJobManager checks c for a JobManager, which also needs the
// shared storage (TaskManagers and clients only find the leader, so they
// may leave high-availability.storageDir out).
func (c Config) ValidateJobManager() error {
	err := c.Validate()
	if c.StorageDir == "" {
		err = errors.Join(err, fmt.Errorf("ha: %s is empty: with %s etcd a JobManager needs shared storage every JobManager reaches (a shared path, file:// or s3://bucket/prefix)",
			config.HAStorageDir, config.HAType))
	}
	return err
}

// withDefaults fills the zero fields that have defaults.
func (c Config) withDefaults() Config {
	if c.ClusterID == "" {
		c.ClusterID = DefaultClusterID
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// leaseSeconds is LeaseTTL in whole seconds, rounded up.
func (c Config) leaseSeconds() int {
	return int((c.LeaseTTL + time.Second - 1) / time.Second)
}

// endpointScheme is "https", "http" or "" (none given).
func endpointScheme(e string) string {
	if s, _, ok := strings.Cut(e, "://"); ok {
		return s
	}
	return ""
}

// normalizeClusterID turns a cluster id into "/name" or "/a/b": one
// leading slash, no trailing or doubled ones.
func normalizeClusterID(id string) (string, error) {
	if strings.Trim(id, "/") == "" {
		return "", errors.New(`does not name a cluster: use a name like "/default"`)
	}
	if strings.IndexFunc(id, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return "", errors.New("contains spaces or control characters")
	}
	return path.Clean("/" + id), nil
}
