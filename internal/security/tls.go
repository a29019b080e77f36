package security

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/weirstream/weir/internal/config"
)

// Internal is the mutual TLS of the RPC and the data plane: one
// certificate for both ends of every connection and the CA that signs
// every peer's.
type Internal struct {
	// Config serves (it requires and verifies client certificates) and
	// dials (set ServerName per connection: ClientConfig).
	Config *tls.Config
	// CAFile is the file the CA came from, for messages.
	CAFile string
}

// LoadInternal reads the security.ssl.internal files; nil when TLS is off.
func LoadInternal(f config.TLSFiles) (*Internal, error) {
	if !f.Enabled {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("%scert-file %s with %skey-file %s: %w", f.Prefix, f.CertFile, f.Prefix, f.KeyFile, err)
	}
	pool, err := loadPool(f.Prefix+"ca-file", f.CAFile)
	if err != nil {
		return nil, err
	}
	return &Internal{
		Config: &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{cert},
			RootCAs:      pool,
			ClientCAs:    pool,
			ClientAuth:   tls.RequireAndVerifyClientCert,
		},
		CAFile: f.CAFile,
	}, nil
}

// ClientConfig returns a copy of c for dialling addr (HOST:PORT): the
// server name to verify is addr's host.
func ClientConfig(c *tls.Config, addr string) *tls.Config {
	c = c.Clone()
	c.ServerName = hostOf(addr)
	return c
}

// REST is the REST API's TLS: the server's certificate, and its clients'
// CA when they must present one.
type REST struct {
	// Server serves https; nil when the process has no certificate.
	Server *tls.Config
	// Client dials the REST API: it trusts the CA file (or the system's)
	// and presents the certificate if one is set.
	Client *tls.Config
}

// LoadREST reads the security.ssl.rest files; nil when TLS is off.
func LoadREST(f config.TLSFiles) (*REST, error) {
	if !f.Enabled {
		return nil, nil
	}
	r := &REST{Client: &tls.Config{MinVersion: tls.VersionTLS12}}
	var pool *x509.CertPool
	if f.CAFile != "" {
		var err error
		if pool, err = loadPool(f.Prefix+"ca-file", f.CAFile); err != nil {
			return nil, err
		}
		r.Client.RootCAs = pool
	}
	if f.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%scert-file %s with %skey-file %s: %w", f.Prefix, f.CertFile, f.Prefix, f.KeyFile, err)
		}
		r.Client.Certificates = []tls.Certificate{cert}
		r.Server = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
		if pool != nil {
			r.Server.ClientCAs = pool
			r.Server.ClientAuth = tls.RequireAndVerifyClientCert
		}
	}
	return r, nil
}

func loadPool(key, file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s %s: no PEM certificate in it", key, file)
	}
	return pool, nil
}
