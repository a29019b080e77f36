package ha

import (
	"context"
	"go/parser"
	"go/token"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/ha/etcdtest"
)

func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestConnectUnreachable(t *testing.T) {
	a, b := closedPort(t), "http://"+closedPort(t)
	cfg := testConfig(a)
	cfg.Endpoints = append(cfg.Endpoints, b)
	cfg.DialTimeout = 500 * time.Millisecond
	start := time.Now()
	_, err := Connect(context.Background(), cfg)
	if err == nil {
		t.Fatal("Connect to closed ports succeeded")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Connect took %v with a dial timeout of 500 ms", d)
	}
	for _, want := range []string{a, b, config.HAEtcdEndpoints, "did not answer within 500 ms"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// An etcd with authentication: a wrong password and a missing user are
// refused naming the keys; a user without rights on the prefix too.
func TestConnectAuth(t *testing.T) {
	srv := etcdtest.Start(t, "")
	admin := connect(t, srv)
	ctx := ctxT(t, 30*time.Second)
	for _, step := range []func() error{
		func() error { _, err := admin.cli.UserAdd(ctx, "root", "rootpw"); return err },
		func() error { _, err := admin.cli.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := admin.cli.UserAdd(ctx, "nobody", "pw"); return err },
		func() error { _, err := admin.cli.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		user, password string
		want           []string
	}{
		{"root", "wrong", []string{config.HAEtcdUsername, config.HAEtcdPassword, `"root"`}},
		{"", "", []string{config.HAEtcdUsername, "requires authentication"}},
		{"nobody", "pw", []string{config.HAEtcdUsername, "/weir/test/", "grant"}},
	} {
		cfg := testConfig(srv.Endpoint())
		cfg.Username, cfg.Password = tc.user, tc.password
		start := time.Now()
		c, err := Connect(ctx, cfg)
		t.Logf("as %q after %v: %v", tc.user, time.Since(start), err)
		if err == nil {
			c.Close()
			t.Errorf("Connect as %q succeeded", tc.user)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Connect as %q: %q does not say %q", tc.user, err, w)
			}
		}
	}
	cfg := testConfig(srv.Endpoint())
	cfg.Username, cfg.Password = "root", "rootpw"
	c, err := Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := campaign(t, c, "jm")
	if err := l.SaveJob(ctx, "demo", nil); err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func TestConnectTLSErrors(t *testing.T) {
	srv := etcdtest.Start(t, "")
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	os.WriteFile(notPEM, []byte("not a certificate"), 0o600)

	cfg := testConfig("https://" + srv.Endpoint())
	cfg.CAFile = filepath.Join(dir, "missing.pem")
	if _, err := Connect(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), config.HAEtcdTLSCAFile) {
		t.Errorf("missing CA file: %v", err)
	}
	cfg.CAFile = notPEM
	if _, err := Connect(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), config.HAEtcdTLSCAFile) {
		t.Errorf("CA file without PEM: %v", err)
	}
	cfg.CAFile, cfg.CertFile, cfg.KeyFile = "", notPEM, notPEM
	if _, err := Connect(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), config.HAEtcdTLSCertFile) {
		t.Errorf("bad client certificate: %v", err)
	}
	// https to a plain server: the handshake fails.
	cfg.CertFile, cfg.KeyFile = "", ""
	cfg.DialTimeout = time.Second
	_, err := Connect(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), srv.Endpoint()) || !strings.Contains(err.Error(), "high-availability.etcd.tls") {
		t.Fatalf("https to a plain etcd: %v", err)
	}
	t.Logf("https to a plain etcd: %v", err)
}

func TestFromConfig(t *testing.T) {
	c := config.New()
	if _, enabled, err := FromConfig(c); enabled || err != nil {
		t.Fatalf("type NONE: enabled %v, %v", enabled, err)
	}
	must := func(k, v string) {
		if err := c.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	must(config.HAType, "etcd")
	hc, enabled, err := FromConfig(c)
	if !enabled || err == nil {
		t.Fatalf("etcd without endpoints: enabled %v, err %v", enabled, err)
	}
	if !strings.Contains(err.Error(), config.HAEtcdEndpoints) {
		t.Errorf("error %q does not name %s", err, config.HAEtcdEndpoints)
	}
	// A JobManager needs the storage too; TaskManagers and clients do not.
	hc.Endpoints = []string{"a:1"}
	if err := hc.Validate(); err != nil {
		t.Errorf("without storage, for a TaskManager: %v", err)
	}
	err = hc.ValidateJobManager()
	for _, w := range []string{config.HAStorageDir} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %s", err, w)
		}
	}
	must(config.HAEtcdEndpoints, "http://a:1, https://b:2")
	must(config.HAStorageDir, "s3://bucket/ha")
	if _, _, err := FromConfig(c); err == nil || !strings.Contains(err.Error(), "mixes http:// and https://") {
		t.Errorf("mixed schemes: %v", err)
	}
	must(config.HAEtcdEndpoints, "a:1, b:2")
	must(config.HAEtcdUsername, "weir")
	if _, _, err := FromConfig(c); err == nil || !strings.Contains(err.Error(), config.HAEtcdPassword) {
		t.Errorf("username without password: %v", err)
	}
	must(config.HAEtcdPassword, "pw")
	must(config.HAEtcdLeaseTTL, "3 s")
	must(config.HAClusterID, "prod")
	got, enabled, err := FromConfig(c)
	if err != nil || !enabled {
		t.Fatal(enabled, err)
	}
	want := Config{Endpoints: []string{"a:1", "b:2"}, ClusterID: "prod", StorageDir: "s3://bucket/ha",
		Username: "weir", Password: "pw", LeaseTTL: 3 * time.Second, DialTimeout: 5 * time.Second}
	if got.Logger != nil || strings.Join(got.Endpoints, ",") != "a:1,b:2" || got.ClusterID != want.ClusterID ||
		got.StorageDir != want.StorageDir || got.Username != want.Username || got.Password != want.Password ||
		got.LeaseTTL != want.LeaseTTL || got.DialTimeout != want.DialTimeout {
		t.Fatalf("FromConfig = %+v, want %+v", got, want)
	}
	if err := (Config{Endpoints: []string{"a:1"}, StorageDir: "/x", LeaseTTL: 500 * time.Millisecond}).Validate(); err == nil ||
		!strings.Contains(err.Error(), config.HAEtcdLeaseTTL) {
		t.Errorf("sub-second TTL: %v", err)
	}
}

func TestKeyLayout(t *testing.T) {
	for _, tc := range []struct{ id, root string }{
		{"/default", "/weir/default"}, {"default", "/weir/default"}, {"/prod/", "/weir/prod"},
		{"/a/leader", "/weir/a%2Fleader"}, // nested ids stay one segment
	} {
		k, err := newKeys(tc.id)
		if err != nil || k.root != tc.root {
			t.Errorf("cluster-id %q: root %q, %v; want %q", tc.id, k.root, err, tc.root)
		}
	}
	k, _ := newKeys("/default")
	for key, want := range map[string]string{
		k.leaderPrefix():           "/weir/default/leader",
		k.job("a/../b"):            "/weir/default/jobs/a%2F..%2Fb",
		k.checkpoint("demo", 42):   "/weir/default/checkpoints/demo/00000000000000000042",
		k.counter("demo"):          "/weir/default/checkpoint-counter/demo",
		k.checkpointsPrefix("a/b"): "/weir/default/checkpoints/a%2Fb/",
	} {
		if key != want {
			t.Errorf("key %q, want %q", key, want)
		}
	}
	if _, err := newKeys("//"); err == nil {
		t.Error("cluster-id // accepted")
	}
}

// The production code links only the etcd client: the server module may
// appear in tests and in etcdtest alone.
func TestProductionCodeImportsNoEtcdServer(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, "go.etcd.io/etcd/server") || strings.HasSuffix(p, "/etcdtest") {
				t.Errorf("%s imports %s", f, p)
			}
		}
	}
}
