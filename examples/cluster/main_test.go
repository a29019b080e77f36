package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"github.com/weirstream/weir/app"
	"github.com/weirstream/weir/connectors/file"
)

// expected is the committed output of n clicks: for each click, its
// page's running count.
func expected(n int64) []string {
	seen := map[string]int64{}
	var out []string
	for i := range n {
		p := click(i).Page
		seen[p]++
		out = append(out, p+","+strconv.FormatInt(seen[p], 10))
	}
	slices.Sort(out)
	return out
}

// TestRunLocal runs the job through app's command line in process and
// compares the committed lines with the expected multiset.
func TestRunLocal(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	var stderr bytes.Buffer
	p := &app.Program{Name: "keyedcount", Jobs: []app.Job{keyedCount()}, Stderr: &stderr, Getenv: func(string) string { return "" }}
	code := p.Run(context.Background(), []string{"run", "keyedcount", "--events", "3000", "--out", out,
		"-D", "state.checkpoints.dir=" + filepath.Join(dir, "chk")})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	got, err := file.ReadCommitted(out)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := expected(3000); !slices.Equal(got, want) {
		t.Fatalf("committed %d lines, want %d; first differences: got %v, want %v", len(got), len(want), head(got), head(want))
	}
}

func head(s []string) []string { return s[:min(5, len(s))] }

// TestBuilds builds the example as a program and checks that its command
// tree answers: bad input is exit 2.
func TestBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := filepath.Join(t.TempDir(), "keyedcount")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "taskmanager", "--slots", "0")
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !bytes.Contains(out, []byte("--slots")) {
		t.Fatalf("taskmanager --slots 0: exit %d, %s", cmd.ProcessState.ExitCode(), out)
	}
}
