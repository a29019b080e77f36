package s3fs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/weirstream/weir/internal/config"
)

// DefaultEndpoint is AWS S3's global endpoint, used when neither
// s3.endpoint nor AWS_ENDPOINT_URL(_S3) is set.
const DefaultEndpoint = "https://s3.amazonaws.com"

// DefaultPartSize is the part size of multipart uploads, and so the most
// memory one file being written holds. S3 requires at least 5 MiB.
const DefaultPartSize = 8 << 20

// Config says how to reach an S3 service. The zero value talks to AWS with
// credentials found in ~/.aws/credentials or from the instance's role.
type Config struct {
	// Endpoint is the service URL, http:// or https://, e.g.
	// http://localhost:9000 for a local MinIO; empty means AWS.
	Endpoint string
	// Region signs requests; empty lets the client ask the bucket for it.
	Region string
	// AccessKey and SecretKey, and SessionToken for temporary
	// credentials, are static credentials. Empty: the shared credentials
	// file (AWS_PROFILE) or the instance's, task's or pod's IAM role.
	AccessKey, SecretKey, SessionToken string
	// PathStyle sends the bucket in the path (host/bucket/key) instead of
	// the host name (bucket.host/key); most self-hosted stores need it.
	PathStyle bool
	// CABundle is a PEM file of extra trusted certificate authorities, for
	// endpoints with private certificates (AWS_CA_BUNDLE).
	CABundle string
	// PartSize is the multipart upload part size (default DefaultPartSize,
	// at least 5 MiB).
	PartSize int64
	// Transport replaces the HTTP transport (tests).
	Transport http.RoundTripper
	// MaxRetries bounds the client's retries of a failed request (default:
	// the client library's, 10).
	MaxRetries int
}

// ConfigFrom builds a Config from weir's configuration and, for what it
// leaves unset, the standard AWS environment variables read through getenv
// (os.Getenv in production): AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL,
// AWS_REGION or AWS_DEFAULT_REGION, AWS_ACCESS_KEY_ID with
// AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, AWS_CA_BUNDLE. Configuration
// wins over the environment. An endpoint without a scheme gets https://
// unless s3.connection.ssl.enabled is false; a scheme that contradicts an
// explicit s3.connection.ssl.enabled is an error.
func ConfigFrom(c *config.Config, getenv func(string) string) (Config, error) {
	var cfg Config
	first := func(vals ...string) string {
		for _, v := range vals {
			if v != "" {
				return v
			}
		}
		return ""
	}
	cfg.Endpoint = first(c.String(config.S3Endpoint), getenv("AWS_ENDPOINT_URL_S3"), getenv("AWS_ENDPOINT_URL"))
	if cfg.Endpoint != "" {
		ssl := c.Bool(config.S3SSLEnabled)
		scheme, _, hasScheme := strings.Cut(cfg.Endpoint, "://")
		switch {
		case !hasScheme && ssl:
			cfg.Endpoint = "https://" + cfg.Endpoint
		case !hasScheme:
			cfg.Endpoint = "http://" + cfg.Endpoint
		case c.IsSet(config.S3SSLEnabled) && (strings.EqualFold(scheme, "https") != ssl):
			return Config{}, fmt.Errorf("%s %q contradicts %s=%t; drop the scheme from the endpoint or the %s setting", config.S3Endpoint, cfg.Endpoint, config.S3SSLEnabled, ssl, config.S3SSLEnabled)
		}
	}
	cfg.Region = first(c.String(config.S3Region), getenv("AWS_REGION"), getenv("AWS_DEFAULT_REGION"))
	cfg.PathStyle = c.Bool(config.S3PathStyle)
	cfg.CABundle = getenv("AWS_CA_BUNDLE")
	switch ak, sk := c.String(config.S3AccessKey), c.String(config.S3SecretKey); {
	case ak != "" && sk != "":
		cfg.AccessKey, cfg.SecretKey, cfg.SessionToken = ak, sk, c.String(config.S3SessionToken)
	case ak != "" || sk != "":
		return Config{}, fmt.Errorf("set both %s and %s, or neither (then AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are used)", config.S3AccessKey, config.S3SecretKey)
	default:
		ak, sk = getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
		if (ak == "") != (sk == "") {
			return Config{}, errors.New("set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or neither")
		}
		cfg.AccessKey, cfg.SecretKey, cfg.SessionToken = ak, sk, getenv("AWS_SESSION_TOKEN")
	}
	return cfg, cfg.validate()
}

// validate checks what can be checked without a request.
func (c *Config) validate() error {
	if c.Endpoint != "" {
		if _, _, err := c.endpoint(); err != nil {
			return err
		}
	}
	if c.PartSize != 0 && c.PartSize < 5<<20 {
		return fmt.Errorf("s3 part size %d is below S3's minimum of 5 MiB", c.PartSize)
	}
	return nil
}

// endpoint splits Endpoint into the host the client dials and whether it
// uses TLS.
func (c *Config) endpoint() (host string, secure bool, err error) {
	ep := c.Endpoint
	if ep == "" {
		ep = DefaultEndpoint
	}
	u, err := url.Parse(ep)
	if err != nil {
		return "", false, fmt.Errorf("%s %q: %v; write http(s)://host[:port]", config.S3Endpoint, ep, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", false, fmt.Errorf("%s %q: scheme %q is neither http nor https; write http(s)://host[:port]", config.S3Endpoint, ep, u.Scheme)
	}
	if u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return "", false, fmt.Errorf("%s %q: want http(s)://host[:port] without a path; the bucket and prefix go into state.checkpoints.dir", config.S3Endpoint, ep)
	}
	return u.Host, u.Scheme == "https", nil
}

// tlsConfig returns the TLS settings with CABundle's authorities added.
func (c *Config) tlsConfig() (*tls.Config, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	pem, err := os.ReadFile(c.CABundle)
	if err != nil {
		return nil, fmt.Errorf("AWS_CA_BUNDLE: %w", err)
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("AWS_CA_BUNDLE %s holds no PEM certificate", c.CABundle)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
