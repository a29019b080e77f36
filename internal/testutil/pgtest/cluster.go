// Package pgtest runs throwaway PostgreSQL clusters for weir's tests.
//
// A test that restarts, crash-stops or exhausts a server must not do it to
// the shared one on 127.0.0.1:5432 (.ci/postgres.sh): go test ./... runs
// packages in parallel, and the other packages' PostgreSQL tests would
// fail on a restart or a full max_prepared_transactions they did not ask
// for. NewCluster creates a cluster of the test's own with Debian's
// postgresql-common tools (pg_createcluster on a free port, trust auth),
// and drops it when the test ends. That needs root and those tools, as CI
// has (it runs .ci/postgres.sh with them); elsewhere the test skips,
// saying why. A cluster left by a killed test process is dropped by the
// next one.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster is a throwaway PostgreSQL cluster on 127.0.0.1.
type Cluster struct {
	Version, Name string
	Port          int
	// Conn is the connection string of its "postgres" database; it holds
	// a '?', so options are appended with '&'.
	Conn string
}

// clusterPrefix starts the names of the clusters tests create; the
// creating process's pid follows, so a later run can tell stale ones.
const clusterPrefix = "weirtest_"

var clusterSeq atomic.Int64

// NewCluster creates and starts a cluster, dropped when the test ends.
// settings are server settings ("max_prepared_transactions=2"); without
// one for max_prepared_transactions the cluster allows 16. It skips the
// test without root or the postgresql-common tools.
func NewCluster(t testing.TB, settings ...string) *Cluster {
	t.Helper()
	for _, tool := range []string{"pg_createcluster", "pg_ctlcluster", "pg_dropcluster"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found (%v): this test runs a PostgreSQL cluster of its own, made with Debian's postgresql-common tools; install postgresql (apt-get install postgresql) and run as root", tool, err)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: it creates and drops a PostgreSQL cluster of its own with pg_createcluster and pg_ctlcluster (CI runs as root)")
	}
	version := newestVersion(t)
	dropStaleClusters(t, version)
	c := &Cluster{Version: version, Name: fmt.Sprintf("%s%d_%d", clusterPrefix, os.Getpid(), clusterSeq.Add(1)), Port: freePort(t)}
	c.Conn = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.Port)
	args := []string{version, c.Name, "-p", strconv.Itoa(c.Port)}
	if !hasSetting(settings, "max_prepared_transactions") {
		settings = append(settings, "max_prepared_transactions=16")
	}
	for _, s := range settings {
		args = append(args, "-o", s)
	}
	runTool(t, "pg_createcluster", append(args, "--", "--auth=trust")...)
	t.Cleanup(func() {
		if out, err := exec.Command("pg_dropcluster", "--stop", c.Version, c.Name).CombinedOutput(); err != nil {
			t.Errorf("pg_dropcluster --stop %s %s: %v\n%s", c.Version, c.Name, err, out)
		}
	})
	c.Ctl(t, "start")
	return c
}

func hasSetting(settings []string, name string) bool {
	for _, s := range settings {
		if k, _, _ := strings.Cut(s, "="); strings.TrimSpace(k) == name {
			return true
		}
	}
	return false
}

// freePort is a TCP port free on 127.0.0.1 right now.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Ctl runs pg_ctlcluster on the cluster and, after start and restart,
// waits until it accepts connections.
func (c *Cluster) Ctl(t testing.TB, args ...string) {
	t.Helper()
	start := time.Now()
	runTool(t, "pg_ctlcluster", append([]string{"--skip-systemctl-redirect", c.Version, c.Name}, args...)...)
	if args[0] == "start" || args[0] == "restart" {
		c.waitReady(t)
	}
	t.Logf("pg_ctlcluster %s: %s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
}

func (c *Cluster) waitReady(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, c.Conn)
		if err == nil {
			conn.Close(ctx)
			cancel()
			return
		}
		cancel()
		if time.Now().After(deadline) {
			t.Fatalf("cluster %s/%s does not accept connections after 30 s: %v; see /var/log/postgresql/postgresql-%s-%s.log", c.Version, c.Name, err, c.Version, c.Name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Connect opens a connection to the cluster's "postgres" database, closed
// when the test ends.
func (c *Cluster) Connect(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.Conn)
	if err != nil {
		t.Fatalf("connect to cluster %s/%s: %v", c.Version, c.Name, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// Prepared lists the cluster's prepared transactions, sorted.
func (c *Cluster) Prepared(t testing.TB) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.Conn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT gid FROM pg_prepared_xacts")
	if err != nil {
		t.Fatal(err)
	}
	gids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(gids)
	return gids
}

// newestVersion is the newest PostgreSQL version with clusters configured
// under /etc/postgresql, as .ci/postgres.sh picks it.
func newestVersion(t testing.TB) string {
	t.Helper()
	entries, err := os.ReadDir("/etc/postgresql")
	if err != nil {
		t.Skipf("no PostgreSQL installed (%v): install postgresql (apt-get install postgresql)", err)
	}
	var versions []float64
	names := map[float64]string{}
	for _, e := range entries {
		if v, err := strconv.ParseFloat(e.Name(), 64); err == nil && e.IsDir() {
			versions = append(versions, v)
			names[v] = e.Name()
		}
	}
	if len(versions) == 0 {
		t.Skip("no PostgreSQL version under /etc/postgresql: install postgresql (apt-get install postgresql)")
	}
	sort.Float64s(versions)
	return names[versions[len(versions)-1]]
}

// dropStaleClusters drops the clusters of earlier test processes that no
// longer run (killed before their cleanup).
func dropStaleClusters(t testing.TB, version string) {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join("/etc/postgresql", version, clusterPrefix+"*"))
	for _, d := range dirs {
		name := filepath.Base(d)
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(name, clusterPrefix), "_", 2)[0])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			continue // its process still runs (or cannot be asked): not ours to drop
		}
		out, err := exec.Command("pg_dropcluster", "--stop", version, name).CombinedOutput()
		t.Logf("dropped stale cluster %s/%s of process %d: %v %s", version, name, pid, err, out)
	}
}

// runTool runs a command or fails the test with its output.
func runTool(t testing.TB, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}
