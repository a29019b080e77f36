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

// natsServer is a nats-server process with JetStream file storage in a
// folder of its own, on a loopback port of its own (never the CI's shared
// server): killed and started again, it comes back at the same address
// with the streams, messages and duplicate-window message ids it stored.
type natsServer struct {
	t    *testing.T
	bin  string
	addr string
	dir  string
	cmd  *exec.Cmd
	out  *strings.Builder // the running process's stdout and stderr
}

// startNatsServer starts a natsServer on a free port. The test skips when
// the binary is absent, except under CI (CI set), where .ci/nats.sh must
// have installed it.
func startNatsServer(t *testing.T) *natsServer {
	t.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("nats-server is not installed, and CI is set: .ci/nats.sh installs it (Debian: apt-get install nats-server)")
		}
		t.Skip("nats-server is not installed (Debian: apt-get install nats-server, or .ci/nats.sh)")
	}
	s := &natsServer{t: t, bin: bin, addr: testutil.FreeAddr(t), dir: filepath.Join(t.TempDir(), "js")}
	t.Cleanup(func() { s.kill() })
	s.start()
	return s
}

// start runs the server and waits until it accepts connections.
func (s *natsServer) start() {
	s.t.Helper()
	host, port, _ := net.SplitHostPort(s.addr)
	s.cmd = exec.Command(s.bin, "-js", "-sd", s.dir, "-a", host, "-p", port)
	s.out = &strings.Builder{}
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start nats-server: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			out := s.out
			s.kill() // and wait for it, so that out is complete
			s.t.Fatalf("nats-server did not listen on %s within 20 s: %v; its output:\n%s", s.addr, err, tail(out.String(), 2000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill SIGKILLs the server, if it runs, and waits for it: what it had
// not written to its files is lost, as in a crash.
func (s *natsServer) kill() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

// TestNatsDemoKillResume fills a stream with the demo's events (weir
// tools produce-demo-events) and runs the demo from it into a second
// stream (created by the run, with a duplicate window that covers the
// checkpoint timeout) through two crashes of the NATS server, a
// nats-server process of the test's own with file storage:
//
//   - after the run's first checkpoint the server is SIGKILLed and
//     started again a second later on the same port and files: the
//     source's reads and the sink's commits wait or fail meanwhile;
//   - once the sink committed through the restarted server, the run and
//     the server are SIGKILLed together, the server is started again,
//     and the same command runs to its end: its restore publishes the
//     restored checkpoint's messages again, and the restarted server
//     must drop those it stored already (by the message ids it
//     recovered from its files).
//
// --verify then finds the sink stream equal to the failure-free output,
// and so does this test reading it itself.
func TestNatsDemoKillResume(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo against a nats-server process")
	}
	ns := startNatsServer(t)
	const (
		events = 100_000
		keys   = 97
	)
	in, out := "nats://"+ns.addr+"/DEMOIN", "nats://"+ns.addr+"/DEMOOUT"
	r := runWeir(t, time.Minute, "tools", "produce-demo-events", "--to", in,
		"--events", strconv.Itoa(events), "--keys", strconv.Itoa(keys))
	wantExit(t, r, 0)
	args := []string{"run", "demo", "--source", in, "--sink", out,
		"--events", strconv.Itoa(events), "--keys", strconv.Itoa(keys), "--verify", "--parallelism", "2",
		"--checkpoint-interval", "100ms", "--state-dir", t.TempDir(), "-v"}
	ep, err := parseEndpoint("--sink", out)
	if err != nil {
		t.Fatal(err)
	}
	first := startWeir(t, 2*time.Minute, args...)
	id := first.waitCompleted(t, 1)
	ns.kill()
	t.Logf("nats-server killed after checkpoint %d", id)
	time.Sleep(time.Second) // the outage
	ns.start()
	// The run goes on: its sink commits through the restarted server.
	n0 := streamMsgs(t, ep)
	for deadline := time.Now().Add(time.Minute); streamMsgs(t, ep) == n0; {
		if time.Now().After(deadline) {
			t.Fatalf("the sink stream stayed at %d messages for a minute after the server restarted; run's stderr (end):\n%s", n0, tail(first.stderr(), 3000))
		}
		time.Sleep(20 * time.Millisecond)
	}
	killed := first.kill()
	ns.kill()
	ns.start()
	t.Logf("run (still running: %v) and nats-server killed once the sink stream grew past %d messages", killed, n0)
	second := runWeir(t, 2*time.Minute, args...)
	wantExit(t, second, 0)
	if killed {
		wantContains(t, second.stderr, "job demo: resuming")
	}
	wantContains(t, second.stderr, "verify: committed output equals the failure-free output exactly")
	got, err := readNatsLines(context.Background(), ep)
	if err != nil {
		t.Fatal(err)
	}
	if d := demo.Diff(demo.Expected(events, keys), got); d != "" {
		t.Fatalf("sink stream: %s", d)
	}
}

// streamMsgs returns how many messages ep's stream holds.
func streamMsgs(t *testing.T, ep endpoint) uint64 {
	t.Helper()
	nc, js, err := natsJS(ep)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, ep.stream)
	if err != nil {
		t.Fatalf("look up stream %s: %v", ep.stream, err)
	}
	return s.CachedInfo().State.Msgs
}
