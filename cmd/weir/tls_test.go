package main

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tlsConf makes certificates with `weir tools certs` and returns the -D
// values of security.ssl.<group>.* that use them.
func tlsConf(t *testing.T, dir, group string) []string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "ca.pem")); err != nil {
		res := runWeir(t, 30*time.Second, "tools", "certs", "--out", dir)
		wantExit(t, res, 0)
	}
	p := "security.ssl." + group + "."
	return []string{p + "enabled=true", p + "cert-file=" + filepath.Join(dir, "node.pem"),
		p + "key-file=" + filepath.Join(dir, "node-key.pem"), p + "ca-file=" + filepath.Join(dir, "ca.pem")}
}

func defines(kvs []string) []string {
	var args []string
	for _, kv := range kvs {
		args = append(args, "-D", kv)
	}
	return args
}

// TestTLSCluster: with the certificates of `weir tools certs`, a
// JobManager and two TaskManagers with mutual TLS on the RPC and the data
// plane run the demo exactly; a TaskManager and a client without the keys
// are refused with messages naming them on both sides.
func TestTLSCluster(t *testing.T) {
	conf := tlsConf(t, filepath.Join(t.TempDir(), "certs"), "internal")
	c := startE2ECluster(t, 0, 2, conf...)
	for _, id := range []string{"tm-0", "tm-1"} {
		c.tmArgs[id] = append([]string{"taskmanager", "--jobmanager", c.rpc, "--slots", "2", "--resource-id", id, "--metrics-address", "-", "-v"}, defines(conf)...)
		c.startTM(id)
	}
	c.waitTaskManagers(2)

	// Parallelism 4 over two TaskManagers: records cross the data plane.
	args, _ := c.demoArgs(40_000, 0, 4, append([]string{"--verify"}, defines(conf)...)...)
	res := runWeir(t, 2*time.Minute, args...)
	if res.code != 0 {
		t.Fatalf("demo on the TLS cluster: exit %d\n%s\n%s", res.code, tail(res.stderr, 3000), c.logs())
	}
	wantContains(t, res.stderr, "job demo: FINISHED", "verify: committed output equals the failure-free output exactly")

	bad := runWeir(t, time.Minute, "taskmanager", "--jobmanager", c.rpc, "--resource-id", "tm-plain", "--metrics-address", "-")
	if bad.code == 0 {
		t.Fatal("a TaskManager without the TLS keys exited 0")
	}
	wantContains(t, bad.stderr, "JobManager at "+c.rpc+" closed the connection without answering", "security.ssl.internal.enabled=true")
	wantContains(t, c.jm.stderr(), "did not start a TLS handshake", "security.ssl.internal.enabled=true")

	list := runWeir(t, time.Minute, "list", "--jobmanager", c.rpc)
	if list.code == 0 {
		t.Fatal("a client without the TLS keys listed the jobs")
	}
	wantContains(t, list.stderr, "security.ssl.internal.enabled=true")
	if ok := runWeir(t, time.Minute, append([]string{"list", "--jobmanager", c.rpc}, defines(conf)...)...); ok.code != 0 {
		t.Fatalf("list with the TLS keys: exit %d\n%s", ok.code, ok.stderr)
	}
}

// TestTLSREST: a local run's --rest-address with security.ssl.rest.*
// (ca-file set: client certificates required) answers https to a client
// with a certificate of the CA, refuses one without and plain http; the
// client commands speak https with the same keys.
func TestTLSREST(t *testing.T) {
	dir := t.TempDir()
	conf := tlsConf(t, filepath.Join(dir, "certs"), "rest")
	server := conf
	addr := freePort(t)
	r := startWeir(t, 2*time.Minute, append([]string{"run", "demo", "--events", "1000000", "--rate", "20000", "-p", "1",
		"--checkpoint-interval", "100ms", "--state-dir", filepath.Join(dir, "state"), "-q", "--rest-address", addr}, defines(server)...)...)
	want := "REST API listening on " + addr
	for l := range r.lines {
		if l == want {
			break
		}
	}
	pem, err := os.ReadFile(filepath.Join(dir, "certs", "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	noCert := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if resp, err := noCert.Get("https://" + addr + "/jobs/overview"); err == nil {
		resp.Body.Close()
		t.Fatalf("https without a client certificate answered %d", resp.StatusCode)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "certs", "node.pem"), filepath.Join(dir, "certs", "node-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}}
	resp, err := hc.Get("https://" + addr + "/jobs/overview")
	if err != nil {
		t.Fatalf("https: %v\n%s", err, r.stderr())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"demo"`) {
		t.Fatalf("https GET /jobs/overview: %d %s", resp.StatusCode, body)
	}
	if resp, err := http.Get("http://" + addr + "/jobs/overview"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("plain http answered 200: %s", b)
		}
	}

	list := runWeir(t, time.Minute, append([]string{"list", "--rest-address", addr}, defines(conf)...)...)
	if list.code != 0 || !strings.Contains(list.stdout, "demo") {
		t.Fatalf("list over https: exit %d\n%s\n%s", list.code, list.stdout, list.stderr)
	}
	plain := runWeir(t, time.Minute, "list", "--rest-address", addr)
	if plain.code == 0 {
		t.Fatal("list over http succeeded against https")
	}
	wantContains(t, plain.stderr, "serves https", "security.ssl.rest.enabled=true")
	r.kill()
}
