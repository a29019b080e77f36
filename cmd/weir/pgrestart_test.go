package main

// PostgreSQL restarted under the exactly-once sink (issue 17, part 6).
//
// These tests restart and crash-stop a PostgreSQL server while the demo
// writes to it. They do not touch the shared server on 127.0.0.1:5432:
// go test ./... runs packages in parallel, and the PostgreSQL tests of
// connectors/postgres (and TestDemoPostgres here) would fail on a restart
// they did not ask for. Instead each test creates a throwaway cluster of
// its own with Debian's postgresql-common tools (pg_createcluster on a
// free port, trust auth, prepared transactions on), restarts that one, and
// drops it at the end. That needs root and those tools, as CI has (it
// runs .ci/postgres.sh with them); elsewhere the tests skip, saying why.
// A cluster left by a killed test run is dropped by the next run.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weirstream/weir/internal/jobs/demo"
)

// TestPostgresRestart: the server is restarted (pg_ctlcluster restart, a
// fast shutdown that ends every session) while the demo writes through
// the exactly-once sink. The job fails over, restores its last checkpoint
// and finishes: exactly one row per event, no prepared transaction left.
func TestPostgresRestart(t *testing.T) {
	testPostgresOutage(t, func(c *pgCluster) { c.ctl(t, "restart") })
}

// TestPostgresCrashStop: the same with the server crash-stopped
// (pg_ctlcluster stop -m immediate: no shutdown checkpoint, crash
// recovery at the next start) and started again a moment later. Prepared
// transactions survive the crash; the restore commits or rolls them back.
func TestPostgresCrashStop(t *testing.T) {
	testPostgresOutage(t, func(c *pgCluster) {
		c.ctl(t, "stop", "-m", "immediate")
		time.Sleep(500 * time.Millisecond)
		c.ctl(t, "start")
	})
}

// testPostgresOutage runs the demo into a fresh table of a cluster of its
// own, applies outage once checkpoints are being committed, and checks
// the table and the server's prepared transactions after the run.
func testPostgresOutage(t *testing.T, outage func(*pgCluster)) {
	if testing.Short() {
		t.Skip("restarts a PostgreSQL cluster of its own")
	}
	c := newPGCluster(t)
	const n, k = 40_000, 101
	table := "weir_restart"
	r := startWeir(t, 3*time.Minute, "run", "demo", "--sink", c.conn+"&table="+table,
		"--events", fmt.Sprint(n), "--keys", fmt.Sprint(k), "--rate", "5000", "--parallelism", "2",
		"--checkpoint-interval", "100ms", "--state-dir", t.TempDir(), "-v")
	r.waitCompleted(t, 3)
	outage(c)
	select {
	case <-r.done:
		t.Fatalf("the demo ended before the server was back, so the outage did not hit it; raise --events. stderr (end):\n%s", tail(r.stderr(), 3000))
	default:
	}
	res := r.wait()
	wantExit(t, res, 0)
	if !restartedRE.MatchString(res.stderr) {
		t.Errorf("the run summary shows no restart; the outage went unnoticed. stderr (end):\n%s", tail(res.stderr, 3000))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lines, err := readPostgresLines(ctx, endpoint{scheme: "postgres", conn: c.conn, table: table})
	if err != nil {
		t.Fatal(err)
	}
	if d := demo.Diff(demo.Expected(n, k), lines); d != "" {
		t.Fatalf("table %s is not exactly one row per event with the failure-free values: %s", table, d)
	}
	if left := c.prepared(t); len(left) > 0 {
		t.Fatalf("prepared transactions left on the server: %v", left)
	}
	t.Logf("%d rows exact, nothing prepared; %s", n, summaryRE.FindString(res.stderr))
}

var (
	restartedRE = regexp.MustCompile(`restarts [1-9]`)
	summaryRE   = regexp.MustCompile(`ran [^\n]*`)
)

// pgCluster is a throwaway PostgreSQL cluster on 127.0.0.1.
type pgCluster struct {
	version, name string
	port          int
	conn          string // connection string to its "postgres" database, with a '?'
}

// clusterPrefix starts the names of the clusters these tests create; the
// creating process's pid follows, so a later run can tell stale ones.
const clusterPrefix = "weirtest_"

var clusterSeq atomic.Int64

// newPGCluster creates and starts a cluster, dropped when the test ends.
// It skips the test without root or the postgresql-common tools.
func newPGCluster(t *testing.T) *pgCluster {
	t.Helper()
	for _, tool := range []string{"pg_createcluster", "pg_ctlcluster", "pg_dropcluster"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found (%v): this test restarts a PostgreSQL cluster of its own, made with Debian's postgresql-common tools; install postgresql (apt-get install postgresql) and run as root", tool, err)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: it creates, restarts and drops a PostgreSQL cluster of its own with pg_createcluster and pg_ctlcluster (CI runs as root)")
	}
	version := newestVersion(t)
	dropStaleClusters(t, version)
	c := &pgCluster{version: version, name: fmt.Sprintf("%s%d_%d", clusterPrefix, os.Getpid(), clusterSeq.Add(1)), port: freeTCPPort(t)}
	c.conn = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
	runTool(t, "pg_createcluster", version, c.name, "-p", strconv.Itoa(c.port), "-o", "max_prepared_transactions=16", "--", "--auth=trust")
	t.Cleanup(func() {
		if out, err := exec.Command("pg_dropcluster", "--stop", c.version, c.name).CombinedOutput(); err != nil {
			t.Errorf("pg_dropcluster --stop %s %s: %v\n%s", c.version, c.name, err, out)
		}
	})
	c.ctl(t, "start")
	return c
}

// freeTCPPort is freePort's port.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	_, port, _ := strings.Cut(freePort(t), ":")
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// ctl runs pg_ctlcluster on the cluster and, after start and restart,
// waits until it accepts connections.
func (c *pgCluster) ctl(t *testing.T, args ...string) {
	t.Helper()
	start := time.Now()
	runTool(t, "pg_ctlcluster", append([]string{"--skip-systemctl-redirect", c.version, c.name}, args...)...)
	if args[0] == "start" || args[0] == "restart" {
		c.waitReady(t)
	}
	t.Logf("pg_ctlcluster %s: %s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
}

func (c *pgCluster) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, c.conn)
		if err == nil {
			conn.Close(ctx)
			cancel()
			return
		}
		cancel()
		if time.Now().After(deadline) {
			t.Fatalf("cluster %s/%s does not accept connections after 30 s: %v; see /var/log/postgresql/postgresql-%s-%s.log", c.version, c.name, err, c.version, c.name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// prepared lists the cluster's prepared transactions.
func (c *pgCluster) prepared(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.conn)
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
	return gids
}

// newestVersion is the newest PostgreSQL version with clusters configured
// under /etc/postgresql, as .ci/postgres.sh picks it.
func newestVersion(t *testing.T) string {
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
func dropStaleClusters(t *testing.T, version string) {
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
func runTool(t *testing.T, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}
