package config

import (
	"errors"
	"fmt"
	"strings"
)

// TLS keys (docs/cluster.md, "Security"), Flink's names. The internal ones
// secure the JobManager's RPC and the TaskManagers' data plane with mutual
// TLS; the rest ones the REST API. They are read by every process role and
// client command (--config, -D), not by a submitted job.
const (
	SSLInternalEnabled  = "security.ssl.internal.enabled"
	SSLInternalCertFile = "security.ssl.internal.cert-file"
	SSLInternalKeyFile  = "security.ssl.internal.key-file"
	SSLInternalCAFile   = "security.ssl.internal.ca-file"

	SSLRESTEnabled  = "security.ssl.rest.enabled"
	SSLRESTCertFile = "security.ssl.rest.cert-file"
	SSLRESTKeyFile  = "security.ssl.rest.key-file"
	SSLRESTCAFile   = "security.ssl.rest.ca-file"
)

func securityOptions() []Option {
	return []Option{
		{Key: SSLInternalEnabled, Default: "false", Kind: KindBool,
			Description: "Mutual TLS between the JobManager, the TaskManagers and the clients (RPC) and between TaskManagers (data plane): every side presents security.ssl.internal.cert-file and accepts only peers whose certificate security.ssl.internal.ca-file signed. Every process and client command of a cluster must set the same."},
		{Key: SSLInternalCertFile, Default: "", Kind: KindString,
			Description: "PEM certificate (chain) this process presents to its peers, for server and client authentication; required with security.ssl.internal.enabled. `weir tools certs --out DIR` makes one for trying it on one machine."},
		{Key: SSLInternalKeyFile, Default: "", Kind: KindString,
			Description: "PEM private key of security.ssl.internal.cert-file."},
		{Key: SSLInternalCAFile, Default: "", Kind: KindString,
			Description: "PEM file of the CA certificates that sign every peer's certificate; required with security.ssl.internal.enabled (the system's CAs are not trusted)."},
		{Key: SSLRESTEnabled, Default: "false", Kind: KindBool,
			Description: "Serve the REST API over https (the JobManager's, and a local run's --rest-address) with security.ssl.rest.cert-file; clients use https and trust security.ssl.rest.ca-file."},
		{Key: SSLRESTCertFile, Default: "", Kind: KindString,
			Description: "PEM certificate (chain) of the REST server; required with security.ssl.rest.enabled."},
		{Key: SSLRESTKeyFile, Default: "", Kind: KindString,
			Description: "PEM private key of security.ssl.rest.cert-file."},
		{Key: SSLRESTCAFile, Default: "", Kind: KindString,
			Description: "PEM CA certificates. Server: when set, every REST client must present a certificate they signed (mutual TLS). Clients: the CAs that sign the server's certificate (empty: the system's), and the client presents security.ssl.rest.cert-file when the server requires one."},
	}
}

// TLSFiles are the PEM files of one security.ssl.* group.
type TLSFiles struct {
	// Enabled is security.ssl.<group>.enabled.
	Enabled bool
	// Prefix is "security.ssl.internal." or "security.ssl.rest.", for
	// messages that name the keys.
	Prefix                    string
	CertFile, KeyFile, CAFile string
}

// InternalTLS returns the security.ssl.internal keys; with TLS enabled the
// three files are required.
func (c *Config) InternalTLS() (TLSFiles, error) {
	f := c.tlsFiles("security.ssl.internal.")
	if !f.Enabled {
		return f, nil
	}
	var missing []string
	for _, k := range []struct{ key, v string }{{SSLInternalCertFile, f.CertFile}, {SSLInternalKeyFile, f.KeyFile}, {SSLInternalCAFile, f.CAFile}} {
		if k.v == "" {
			missing = append(missing, k.key)
		}
	}
	if len(missing) > 0 {
		return f, fmt.Errorf("%s=true needs %s", SSLInternalEnabled, strings.Join(missing, ", "))
	}
	return f, nil
}

// RESTTLS returns the security.ssl.rest keys. A server needs the
// certificate and key; a client needs nothing but may set the CA (and a
// certificate for a server that requires one), so only a lone key or
// certificate is an error here.
func (c *Config) RESTTLS() (TLSFiles, error) {
	f := c.tlsFiles("security.ssl.rest.")
	if !f.Enabled {
		return f, nil
	}
	if (f.CertFile == "") != (f.KeyFile == "") {
		return f, errors.New("security.ssl.rest.cert-file and security.ssl.rest.key-file go together: set both or neither")
	}
	return f, nil
}

func (c *Config) tlsFiles(prefix string) TLSFiles {
	return TLSFiles{
		Enabled:  c.Bool(prefix + "enabled"),
		Prefix:   prefix,
		CertFile: c.String(prefix + "cert-file"),
		KeyFile:  c.String(prefix + "key-file"),
		CAFile:   c.String(prefix + "ca-file"),
	}
}
