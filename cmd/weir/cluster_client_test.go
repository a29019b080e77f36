package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/testutil/fakejm"
)

// TestRunOnJobManager submits the demo to a JobManager (a stand-in that
// builds the job from the submitted spec with weir's own registry and runs
// it in this test process) and follows it: the client exits 0 once the job
// FINISHED, and --verify reads the committed output the job wrote into the
// shared folder.
func TestRunOnJobManager(t *testing.T) {
	p := program()
	jm := fakejm.Start(t, hooks.Resolver(p))
	dir := t.TempDir()
	state, out := filepath.Join(dir, "state"), filepath.Join(dir, "out")
	const events = 20_000
	res := runWeir(t, time.Minute, "run", "demo", "--events", "20000", "-p", "2", "--checkpoint-interval", "50ms",
		"--state-dir", state, "--out", out, "--verify", "-q", "--jobmanager", jm.Addr)
	wantExit(t, res, 0)
	wantContains(t, res.stderr, "job demo submitted to "+jm.Addr, "job demo: FINISHED",
		"verify: committed output equals the failure-free output exactly")
	if d := demo.Diff(demo.Expected(events, demoKeys), committed(t, out)); d != "" {
		t.Fatal(d)
	}
	spec, ok := jm.Spec("demo")
	if !ok {
		t.Fatal("the JobManager has no job demo")
	}
	if spec.Kind != "demo" {
		t.Errorf("kind %q, want demo", spec.Kind)
	}
	for _, a := range spec.Args {
		for _, client := range []string{"--verify", "--quiet", "--jobmanager", "--detached", "--parallelism", "--state-dir"} {
			if strings.HasPrefix(a, client+"=") {
				t.Errorf("submitted arguments %q hold the client-only flag %s", spec.Args, client)
			}
		}
	}
	for _, want := range []string{"--events=20000", "--out=" + out} {
		if !slices.Contains(spec.Args, want) {
			t.Errorf("submitted arguments %q lack %s", spec.Args, want)
		}
	}
	if !slices.ContainsFunc(spec.Args, func(a string) bool {
		return strings.HasPrefix(a, "--fault-seed=") && a != "--fault-seed=0"
	}) {
		t.Errorf("submitted arguments %q lack a chosen --fault-seed", spec.Args)
	}
	if spec.Config["parallelism.default"] != "2" || spec.Config["state.checkpoints.dir"] != state {
		t.Errorf("submitted configuration %v, want parallelism.default=2 and state.checkpoints.dir=%s", spec.Config, state)
	}
}

// TestRunDetachedThenCancel: --detached prints the job id and returns;
// list shows the job; cancel ends it.
func TestRunDetachedThenCancel(t *testing.T) {
	jm := fakejm.Start(t, hooks.Resolver(program()))
	dir := t.TempDir()
	res := runWeir(t, time.Minute, "run", "demo", "--events", "0", "--rate", "1000", "--state-dir", filepath.Join(dir, "state"),
		"--job-name", "forever", "--jobmanager", jm.Addr, "--detached")
	wantExit(t, res, 0)
	if res.stdout != "forever\n" {
		t.Fatalf("stdout %q, want the job id", res.stdout)
	}
	ls := runWeir(t, 30*time.Second, "list", "--jobmanager", jm.Addr)
	wantExit(t, ls, 0)
	wantContains(t, ls.stdout, "forever", "demo")
	wantExit(t, runWeir(t, 30*time.Second, "cancel", "forever", "--jobmanager", jm.Addr), 0)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ls = runWeir(t, 30*time.Second, "list", "--jobmanager", jm.Addr)
		if strings.Contains(ls.stdout, "CANCELED") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job not CANCELED 30s after cancel:\n%s", ls.stdout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	unknown := runWeir(t, 30*time.Second, "cancel", "nosuch", "--jobmanager", jm.Addr)
	wantExit(t, unknown, 1)
	wantContains(t, unknown.stderr, `no job "nosuch"`, "weir list --jobmanager "+jm.Addr)
}

// TestClusterBadInput: each mistake in the cluster commands gets its own
// message and exit code, and nothing hangs.
func TestClusterBadInput(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	state := filepath.Join(t.TempDir(), "state")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	inUse := busy.Addr().String()
	unreachable := "no JobManager at " + closed + ": start one with `weir jobmanager`, or check --jobmanager"
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		code int
		want []string
	}{
		{"zero slots", nil, []string{"taskmanager", "--slots", "0"}, 2, []string{"--slots", "got 0"}},
		{"zero slots from the environment", []string{"WEIR_SLOTS=0"}, []string{"taskmanager"}, 2, []string{"--slots", "got 0"}},
		{"bad slots in the environment", []string{"WEIR_SLOTS=many"}, []string{"taskmanager"}, 2, []string{"WEIR_SLOTS", `"many"`}},
		{"slots key zero", nil, []string{"taskmanager", "-D", "taskmanager.numberOfTaskSlots=0"}, 2, []string{"taskmanager.numberOfTaskSlots", "must be >= 1"}},
		{"heartbeat timeout below interval", nil, []string{"jobmanager", "-D", "heartbeat.timeout=5s", "--state-dir", state}, 2, []string{"heartbeat.timeout", "heartbeat.interval"}},
		{"bad role", []string{"WEIR_ROLE=worker"}, nil, 2, []string{"WEIR_ROLE", "jobmanager or taskmanager"}},
		{"detached without jobmanager", nil, []string{"run", "demo", "--detached", "--state-dir", state}, 2, []string{"--detached", "--jobmanager"}},
		{"unknown job kind", nil, []string{"run", "nosuchjob", "--jobmanager", closed}, 2, []string{`"nosuchjob"`}},
		{"rest address with jobmanager", nil, []string{"run", "demo", "--rest-address", "127.0.0.1:0", "--jobmanager", closed, "--state-dir", state}, 2,
			[]string{"--rest-address", "weir jobmanager --rest-address"}},
		{"bad jobmanager address", nil, []string{"list", "--jobmanager", "nohostport"}, 2, []string{"--jobmanager", "HOST:PORT"}},
		{"run unreachable", nil, []string{"run", "demo", "--events", "100", "--state-dir", state, "--jobmanager", closed, "--connect-timeout", "300ms"}, 1, []string{unreachable}},
		{"run unreachable from the environment", []string{"WEIR_JOBMANAGER=" + closed, "WEIR_CONNECT_TIMEOUT=300ms"}, []string{"run", "demo", "--events", "100", "--state-dir", state}, 1, []string{unreachable}},
		{"list unreachable", nil, []string{"list", "--jobmanager", closed, "--connect-timeout", "300ms"}, 1, []string{unreachable}},
		{"cancel unreachable", nil, []string{"cancel", "demo", "--jobmanager", closed, "--connect-timeout", "300ms"}, 1, []string{unreachable}},
		{"rpc port in use", nil, []string{"jobmanager", "--rpc-address", inUse, "--state-dir", state}, 1, []string{"--rpc-address", inUse, "already in use", "choose another --rpc-address"}},
		{"rest port in use", nil, []string{"jobmanager", "--rpc-address", "127.0.0.1:0", "--rest-address", inUse, "--state-dir", state}, 1, []string{"--rest-address", inUse, "already in use"}},
		{"data port in use", nil, []string{"taskmanager", "--data-address", inUse, "--jobmanager", closed}, 1, []string{"--data-address", inUse, "is in use", "choose another port"}},
		{"checkpoints unreachable", nil, []string{"checkpoints", "demo", "--jobmanager", closed, "--connect-timeout", "300ms"}, 1, []string{unreachable}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, weirBin, tc.args...)
			cmd.Env = append(os.Environ(), tc.env...)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("weir %s did not end within 30s", strings.Join(tc.args, " "))
			}
			res := result{code: cmd.ProcessState.ExitCode(), stderr: stderr.String(), stdout: stdout.String()}
			wantExit(t, res, tc.code)
			if !strings.HasPrefix(res.stderr, "weir: ") || strings.Count(res.stderr, "\n") != 1 {
				t.Errorf("want one line \"weir: …\" on stderr, got:\n%s", res.stderr)
			}
			wantContains(t, res.stderr, tc.want...)
		})
	}
}
