package security_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/security"
)

func TestWriteCerts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	if err := security.WriteCerts(dir, time.Hour); err != nil {
		t.Fatal(err)
	}
	read := func(name string) *x509.Certificate {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := pem.Decode(b)
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ca, node := read(security.CAFileName), read(security.CertFileName)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	for _, host := range []string{"localhost", "127.0.0.1"} {
		for _, use := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if _, err := node.Verify(x509.VerifyOptions{DNSName: host, Roots: pool, KeyUsages: []x509.ExtKeyUsage{use}}); err != nil {
				t.Errorf("%s, usage %v: %v", host, use, err)
			}
		}
	}
	if !ca.IsCA || node.PublicKeyAlgorithm != x509.ECDSA {
		t.Errorf("CA %v, key %v", ca.IsCA, node.PublicKeyAlgorithm)
	}
	if st, err := os.Stat(filepath.Join(dir, security.KeyFileName)); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v %v", st.Mode(), err)
	}
	if _, err := tls.LoadX509KeyPair(filepath.Join(dir, security.CertFileName), filepath.Join(dir, security.KeyFileName)); err != nil {
		t.Fatal(err)
	}
	if err := security.WriteCerts(dir, time.Hour); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("second WriteCerts: %v, want a refusal to overwrite", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	if err := security.WriteCerts(dir, time.Hour); err != nil {
		t.Fatal(err)
	}
	cfg := config.New()
	if err := cfg.SetOverrides([]string{"security.ssl.internal.enabled=true", "security.ssl.internal.cert-file=" + filepath.Join(dir, "node.pem")}); err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.InternalTLS(); err == nil || !strings.Contains(err.Error(), "security.ssl.internal.key-file, security.ssl.internal.ca-file") {
		t.Fatalf("InternalTLS without key and CA: %v", err)
	}
	set := func(kvs ...string) *config.Config {
		c := config.New()
		if err := c.SetOverrides(kvs); err != nil {
			t.Fatal(err)
		}
		return c
	}
	f, err := set("security.ssl.internal.enabled=true", "security.ssl.internal.cert-file="+filepath.Join(dir, "node.pem"),
		"security.ssl.internal.key-file="+filepath.Join(dir, "node-key.pem"), "security.ssl.internal.ca-file="+filepath.Join(dir, "ca.pem")).InternalTLS()
	if err != nil {
		t.Fatal(err)
	}
	in, err := security.LoadInternal(f)
	if err != nil || in.Config.ClientAuth != tls.RequireAndVerifyClientCert || len(in.Config.Certificates) != 1 {
		t.Fatalf("LoadInternal: %+v, %v", in, err)
	}
	if off, _ := security.LoadInternal(config.TLSFiles{}); off != nil {
		t.Fatal("LoadInternal of disabled TLS is not nil")
	}
	f.CAFile = filepath.Join(dir, "node-key.pem")
	if _, err := security.LoadInternal(f); err == nil || !strings.Contains(err.Error(), "security.ssl.internal.ca-file") {
		t.Fatalf("a key as the CA: %v", err)
	}

	rf, err := set("security.ssl.rest.enabled=true", "security.ssl.rest.cert-file="+filepath.Join(dir, "node.pem"),
		"security.ssl.rest.key-file="+filepath.Join(dir, "node-key.pem")).RESTTLS()
	if err != nil {
		t.Fatal(err)
	}
	r, err := security.LoadREST(rf)
	if err != nil || r.Server == nil || r.Server.ClientAuth != tls.NoClientCert {
		t.Fatalf("REST without ca-file: %+v, %v", r, err)
	}
	rf.CAFile = filepath.Join(dir, "ca.pem")
	if r, err = security.LoadREST(rf); err != nil || r.Server.ClientAuth != tls.RequireAndVerifyClientCert || r.Client.RootCAs == nil || len(r.Client.Certificates) != 1 {
		t.Fatalf("REST with ca-file: %+v, %v", r, err)
	}
	if _, err := set("security.ssl.rest.enabled=true", "security.ssl.rest.key-file=x").RESTTLS(); err == nil {
		t.Fatal("a REST key without a certificate passed")
	}
}
