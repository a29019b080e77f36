package app

import (
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/security"
)

// internalTLS loads security.ssl.internal.* (RPC and data plane) of cfg;
// nil when it is off.
func internalTLS(cfg *weir.Config) (*security.Internal, error) {
	f, err := hooks.Config(cfg).InternalTLS()
	if err != nil {
		return nil, Usagef("configuration: %v", err)
	}
	t, err := security.LoadInternal(f)
	if err != nil {
		return nil, Usagef("configuration: %v", err)
	}
	return t, nil
}

// restTLS loads security.ssl.rest.* of cfg; nil when it is off. A server
// also needs the certificate (server true).
func restTLS(cfg *weir.Config, server bool) (*security.REST, error) {
	f, err := hooks.Config(cfg).RESTTLS()
	if err != nil {
		return nil, Usagef("configuration: %v", err)
	}
	if server && f.Enabled && f.CertFile == "" {
		return nil, Usagef("configuration: %s=true needs %s and %s to serve the REST API", config.SSLRESTEnabled, config.SSLRESTCertFile, config.SSLRESTKeyFile)
	}
	t, err := security.LoadREST(f)
	if err != nil {
		return nil, Usagef("configuration: %v", err)
	}
	return t, nil
}

// restTLSHint names the key to set for a REST request that failed for a
// TLS reason, or is "".
func restTLSHint(addr string, tls bool, err error) string {
	var ua x509.UnknownAuthorityError
	switch {
	case !tls:
		return ""
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return fmt.Sprintf("the REST API at %s serves plain http: set %s=false here, or enable it there", addr, config.SSLRESTEnabled)
	case errors.As(err, &ua):
		return fmt.Sprintf("the REST API at %s presented a certificate not signed by %s", addr, config.SSLRESTCAFile)
	case strings.Contains(err.Error(), "remote error: tls"):
		return fmt.Sprintf("the REST API at %s refused the TLS handshake: it requires a client certificate signed by its CA: set %s and %s", addr, config.SSLRESTCertFile, config.SSLRESTKeyFile)
	}
	return ""
}
