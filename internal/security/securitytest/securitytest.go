// Package securitytest makes certificates for tests.
package securitytest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/security"
)

// TLSFiles writes a certificate for localhost and 127.0.0.1 signed by ca
// (a new CA when nil, as `weir tools certs` makes) with ca's PEM into a
// new folder, and returns the security.ssl.internal files and the CA.
func TLSFiles(t testing.TB, ca *security.CA) (config.TLSFiles, *security.CA) {
	t.Helper()
	if ca == nil {
		var err error
		if ca, err = security.NewCA("test CA", time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	cert, key, err := ca.Issue("test node", security.LocalHosts, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := config.TLSFiles{Enabled: true, Prefix: "security.ssl.internal.",
		CertFile: filepath.Join(dir, security.CertFileName),
		KeyFile:  filepath.Join(dir, security.KeyFileName),
		CAFile:   filepath.Join(dir, security.CAFileName)}
	for name, data := range map[string][]byte{f.CertFile: cert, f.KeyFile: key, f.CAFile: ca.PEM} {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f, ca
}

// InternalTLS is TLSFiles loaded.
func InternalTLS(t testing.TB, ca *security.CA) (*security.Internal, *security.CA) {
	t.Helper()
	f, ca := TLSFiles(t, ca)
	in, err := security.LoadInternal(f)
	if err != nil {
		t.Fatal(err)
	}
	return in, ca
}
