package bench

// The benches' tests run the weir binary, as a user (or a script reading
// the JSON) would: the benches start their children from it. TestMain
// builds it once from cmd/weir.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/testutil"
)

// weirBin is the binary TestMain built; set once before any test runs.
var weirBin string

func TestMain(m *testing.M) {
	bin, cleanup, err := testutil.BuildWeir("weir-bench-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench tests:", err)
		os.Exit(1)
	}
	weirBin = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// result is a finished weir process.
type result struct {
	code           int // exit code; -1 if killed by a signal
	stderr, stdout string
}

// runWeir runs the binary to its end, failing the test if it has not ended
// within timeout.
func runWeir(t *testing.T, timeout time.Duration, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, weirBin, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); cmd.ProcessState == nil {
		t.Fatalf("weir %s: %v", strings.Join(args, " "), err)
	}
	r := result{code: cmd.ProcessState.ExitCode(), stderr: stderr.String(), stdout: stdout.String()}
	if ctx.Err() != nil {
		t.Fatalf("weir %s did not end within %s; stderr (end):\n%s", strings.Join(args, " "), timeout, tail(r.stderr, 2000))
	}
	return r
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
