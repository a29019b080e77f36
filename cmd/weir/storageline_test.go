package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A local run names its checkpoint storage at the start and where the
// value came from: --state-dir silently winning over -D
// state.checkpoints.dir is said (issue 17); the summary line names the
// storage too.
func TestStorageLine(t *testing.T) {
	dir := t.TempDir()
	x, y := filepath.Join(dir, "x"), filepath.Join(dir, "y")
	for _, tc := range []struct {
		name string
		args []string
		line string
		at   string
	}{
		{"override", []string{"--state-dir", x, "-D", "state.checkpoints.dir=" + y},
			"checkpoint storage: " + filepath.Join(x, "demo") + " (from --state-dir; -D state.checkpoints.dir=" + y + " is overridden)", x},
		{"plain", []string{"--state-dir", x},
			"checkpoint storage: " + filepath.Join(x, "demo") + " (from --state-dir)", x},
		{"define", []string{"-D", "state.checkpoints.dir=" + y},
			"checkpoint storage: " + filepath.Join(y, "demo") + " (from -D state.checkpoints.dir)", y},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", "demo", "--events", "2000", "--out", filepath.Join(dir, "out-"+tc.name), "-q"}, tc.args...)
			r := runWeir(t, time.Minute, args...)
			wantExit(t, r, 0)
			wantLine(t, r.stderr, tc.line)
			var summary string
			for l := range strings.SplitSeq(r.stderr, "\n") {
				if strings.HasPrefix(l, "ran ") {
					summary = l
				}
			}
			if want := "; checkpoint storage " + filepath.Join(tc.at, "demo"); !strings.HasSuffix(summary, want) {
				t.Errorf("summary line %q does not end in %q", summary, want)
			}
			// The cases share roots: the next one must not be refused
			// for this finished run (docs/guarantees.md).
			if err := os.RemoveAll(filepath.Join(tc.at, "demo")); err != nil {
				t.Fatal(err)
			}
		})
	}
}
