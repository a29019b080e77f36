package main

// End-to-end test of the demo from a NATS JetStream stream to another on
// a real nats-server process (Debian's package, .ci/nats.sh): the weir
// binary is SIGKILLed mid-run and started again, and the sink stream is
// compared with the failure-free output as an exact multiset.

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/testutil"
)

// startNatsServer runs nats-server with JetStream (file storage in a
// temporary folder) on a free loopback port and returns its address. The
// test skips when the binary is absent, except under CI (CI set), where
// .ci/nats.sh must have installed it.
func startNatsServer(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("nats-server is not installed, and CI is set: .ci/nats.sh installs it (Debian: apt-get install nats-server)")
		}
		t.Skip("nats-server is not installed (Debian: apt-get install nats-server, or .ci/nats.sh)")
	}
	addr := testutil.FreeAddr(t)
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-js", "-sd", filepath.Join(t.TempDir(), "js"), "-a", host, "-p", port)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start nats-server: %v", err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("nats-server did not listen on %s within 20 s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestNatsDemoKillResume fills a stream with the demo's events (weir
// tools produce-demo-events), runs the demo from it into a second stream
// (created by the run, with a duplicate window that covers the checkpoint
// timeout), SIGKILLs the run after its second checkpoint, and runs the
// same command to its end: --verify then finds the sink stream equal to
// the failure-free output, and so does this test reading it itself.
func TestNatsDemoKillResume(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo against a nats-server process")
	}
	addr := startNatsServer(t)
	const (
		events = 100_000
		keys   = 97
	)
	in, out := "nats://"+addr+"/DEMOIN", "nats://"+addr+"/DEMOOUT"
	r := runWeir(t, time.Minute, "tools", "produce-demo-events", "--to", in,
		"--events", strconv.Itoa(events), "--keys", strconv.Itoa(keys))
	wantExit(t, r, 0)
	args := []string{"run", "demo", "--source", in, "--sink", out,
		"--events", strconv.Itoa(events), "--keys", strconv.Itoa(keys), "--verify", "--parallelism", "2",
		"--checkpoint-interval", "100ms", "--state-dir", t.TempDir(), "-v"}
	first := startWeir(t, 2*time.Minute, args...)
	first.waitCompleted(t, 2)
	killed := first.kill()
	t.Logf("first run killed after checkpoint 2: %v", killed)
	second := runWeir(t, 2*time.Minute, args...)
	wantExit(t, second, 0)
	if killed {
		wantContains(t, second.stderr, "job demo: resuming")
	}
	wantContains(t, second.stderr, "verify: committed output equals the failure-free output exactly")
	ep, err := parseEndpoint("--sink", out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readNatsLines(context.Background(), ep)
	if err != nil {
		t.Fatal(err)
	}
	if d := demo.Diff(demo.Expected(events, keys), got); d != "" {
		t.Fatalf("sink stream: %s", d)
	}
}
