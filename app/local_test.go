package app

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/testutil"
)

// A job that FINISHED is not resumed: its checkpoints are gone, the next
// run says it starts from scratch, and the exactly-once file sink refuses
// to add a second copy of the output to the first run's folder; into a
// new folder the rerun commits the whole output once.
func TestRerunFinishedLocal(t *testing.T) {
	dir := t.TempDir()
	run := func(out string) (int, string) {
		p, _, stderr := testProgram(nil)
		code := p.Run(context.Background(), []string{"run", "count", "--events", "500", "--out", filepath.Join(dir, out),
			"-D", "state.checkpoints.dir=" + dir, "-D", "execution.checkpointing.interval=20ms"})
		return code, stderr.String()
	}
	code, stderr := run("out")
	if code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	wantLines(t, filepath.Join(dir, "out"), 500)
	if want := "job count: starting from scratch (no checkpoint in " + filepath.Join(dir, "count") + ")\n"; !strings.HasPrefix(stderr, want) {
		t.Errorf("first run's stderr does not start with %q:\n%s", want, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "count")); !os.IsNotExist(err) {
		t.Fatalf("the finished job's checkpoint folder is still there (%v)", err)
	}

	code, stderr = run("out")
	if code != 1 || !strings.Contains(stderr, "job count: starting from scratch") ||
		!strings.Contains(stderr, filepath.Join(dir, "out")+" already holds committed output of an earlier run") {
		t.Fatalf("rerun into the same folder: exit %d, want 1 naming the folder:\n%s", code, stderr)
	}
	wantLines(t, filepath.Join(dir, "out"), 500) // untouched

	if code, stderr = run("out2"); code != 0 {
		t.Fatalf("rerun into a new folder: exit %d: %s", code, stderr)
	}
	wantLines(t, filepath.Join(dir, "out2"), 500)
}

// The client commands reach a local run through its REST API
// (--rest-address): list, checkpoints, savepoint and cancel, which ends the
// run CANCELED. Giving both addresses is a usage error.
func TestClientCommandsLocal(t *testing.T) {
	dir := t.TempDir()
	addr := testutil.FreeAddr(t)
	// The API requires a token; the client commands send it (-D).
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("tok-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runner, _, runErr := testProgram(nil)
	done := make(chan int, 1)
	go func() {
		done <- runner.Run(context.Background(), []string{"run", "count", "--events", "0", "--out", filepath.Join(dir, "out"),
			"-D", "state.checkpoints.dir=" + dir, "-D", "state.savepoints.dir=" + filepath.Join(dir, "saves"),
			"-D", "execution.checkpointing.interval=20ms", "-D", "security.rest.token-file=" + tok, "--rest-address", addr})
	}()
	client := func(args ...string) (int, string, string) {
		p, stdout, stderr := testProgram(nil)
		code := p.Run(context.Background(), append(args, "--rest-address", addr, "-D", "security.rest.token-file="+tok))
		return code, stdout.String(), stderr.String()
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, stdout, _ := client("checkpoints", "count")
		if code == 0 && !strings.Contains(stdout, ": 0 completed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no completed checkpoint through the REST API within 20 s: exit %d, %s", code, stdout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if resp, err := http.Get("http://" + addr + "/jobs"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /jobs without the token: %v %v, want 401", resp, err)
	} else {
		resp.Body.Close()
	}
	code, stdout, stderr := client("list")
	if code != 0 || !strings.Contains(stdout, "count") || !strings.Contains(stdout, "RUNNING") {
		t.Fatalf("list: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = client("savepoint", "count", "--target", filepath.Join(dir, "saves"))
	if code != 0 || !strings.HasPrefix(strings.TrimSpace(stdout), filepath.Join(dir, "saves")) {
		t.Fatalf("savepoint: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr = client("cancel", "count"); code != 0 {
		t.Fatalf("cancel: exit %d\n%s%s", code, stdout, stderr)
	}
	select {
	case code := <-done:
		if code != 1 || !strings.Contains(runErr.String(), "job count CANCELED") {
			t.Fatalf("the canceled run: exit %d, want 1 saying CANCELED:\n%s", code, runErr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not end within 20 s of cancel")
	}
	p, _, stderr2 := testProgram(nil)
	if code := p.Run(context.Background(), []string{"list", "--jobmanager", "127.0.0.1:6123", "--rest-address", addr}); code != 2 ||
		!strings.Contains(stderr2.String(), "not both") {
		t.Fatalf("both addresses: exit %d, %s", code, stderr2)
	}
}
