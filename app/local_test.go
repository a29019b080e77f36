package app

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/testutil"
)

// A job that FINISHED is not resumed and not run again by mistake: its
// checkpoints are gone and its folder records the run; the same command
// again is refused before the job starts, naming the run and the ways
// forward, and writes nothing; with --rerun it runs from scratch (a
// failed rerun leaves the record, so the next plain run is refused), and
// the exactly-once file sink still refuses the first run's folder (its
// own check, defence in depth) while a new folder gets the output once.
func TestRerunFinishedLocal(t *testing.T) {
	dir := t.TempDir()
	run := func(out string, extra ...string) (int, string) {
		p, _, stderr := testProgram(nil)
		code := p.Run(context.Background(), append([]string{"run", "count", "--events", "500", "--out", filepath.Join(dir, out),
			"-D", "state.checkpoints.dir=" + dir, "-D", "execution.checkpointing.interval=20ms"}, extra...))
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
	marker := filepath.Join(dir, "count", "_finished.json")
	ents, err := os.ReadDir(filepath.Join(dir, "count"))
	if err != nil || len(ents) != 1 || ents[0].Name() != "_finished.json" {
		t.Fatalf("the finished job's folder holds %v (%v), want only its finished-run marker", ents, err)
	}

	// Into a new folder, so that only the new refusal can stop it.
	code, stderr = run("out2")
	if code != 1 || !strings.Contains(stderr, "job count already FINISHED: "+marker+" records its run that finished at ") ||
		!strings.Contains(stderr, "pass --rerun") || strings.Contains(stderr, "starting from scratch") {
		t.Fatalf("rerun: exit %d, want 1 naming the finished run before the start line:\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "out2")); !os.IsNotExist(err) {
		t.Fatalf("the refused run wrote its output folder (%v)", err)
	}

	code, stderr = run("out", "--rerun")
	if code != 1 || !strings.Contains(stderr, "job count: running again from scratch (--rerun) after its run that FINISHED at ") ||
		!strings.Contains(stderr, filepath.Join(dir, "out")+" already holds committed output of an earlier run") {
		t.Fatalf("--rerun into the same folder: exit %d, want 1 naming the folder:\n%s", code, stderr)
	}
	wantLines(t, filepath.Join(dir, "out"), 500) // untouched
	// The failed rerun left the record: a plain run is still refused.
	if code, stderr = run("out2"); code != 1 || !strings.Contains(stderr, "job count already FINISHED") {
		t.Fatalf("plain run after a failed --rerun: exit %d, want 1 refused:\n%s", code, stderr)
	}

	if code, stderr = run("out2", "--rerun"); code != 0 || !strings.Contains(stderr, "job count: starting from scratch") {
		t.Fatalf("--rerun into a new folder: exit %d: %s", code, stderr)
	}
	wantLines(t, filepath.Join(dir, "out2"), 500)
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the rerun that finished did not record itself: %v", err)
	}
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
	// rescale: in place, at the default parallelism; a refused rescale
	// says why and leaves the job running.
	if code, _, stderr = client("rescale", "count"); code != 2 || !strings.Contains(stderr, "--parallelism N or --vertex UID=N") {
		t.Fatalf("rescale without a parallelism: exit %d, %s", code, stderr)
	}
	if code, _, stderr = client("rescale", "count", "--vertex", "nosuch=2"); code != 1 || !strings.Contains(stderr, `no operator has uid "nosuch"`) || !strings.Contains(stderr, `"files"`) {
		t.Fatalf("rescale of an unknown uid: exit %d, %s", code, stderr)
	}
	code, stdout, stderr = client("rescale", "count", "--parallelism", "2", "--vertex", "files=3")
	if code != 0 || !regexp.MustCompile(`^rescaled count on checkpoint \d+: .*=2.*\n$`).MatchString(stdout) || !strings.Contains(stdout, "files=3") {
		t.Fatalf("rescale: exit %d\n%s%s", code, stdout, stderr)
	}
	deadline = time.Now().Add(20 * time.Second)
	for {
		code, stdout, _ = client("list")
		if code == 0 && strings.Contains(stdout, "RUNNING") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not RUNNING again within 20 s of the rescale: exit %d, %s", code, stdout)
		}
		time.Sleep(20 * time.Millisecond)
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
