package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobs/demo"
)

// TestCorruptNewestCheckpoint: the demo is killed mid-run, its newest
// checkpoint is damaged, and it is started again with the same command. It
// must log a line naming the skipped checkpoint and the damaged file, and
// restore the next older one.
//
// What may happen next is bounded by exactly-once. Once the newest
// checkpoint completed, its sink transactions were committed, so resuming
// from an older checkpoint would commit those records a second time. The
// run may therefore either finish with exactly the failure-free output (if
// nothing after the older checkpoint had been committed), or fail promptly
// — exit code 1, not a restart loop — with a message saying the output was
// already committed, leaving the committed output as it was. Anything else
// (duplicates, a hang, success with wrong output) fails the test.
func TestCorruptNewestCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo mid-way and restarts it")
	}
	const events = 600_000
	dir := t.TempDir()
	jobDir := filepath.Join(dir, "state", "demo")
	out := filepath.Join(dir, "out")
	args := demoArgs(dir, events, "200000", "-D", "state.checkpoints.num-retained=3", "-v")
	ids := killMidRun(t, args, jobDir, 4)
	newest, older := ids[len(ids)-1], ids[len(ids)-2]
	damaged := corruptCheckpoint(t, chkPath(dir, newest))
	before := committed(t, out)

	res, ended := runFor(t, 20*time.Second, args...)

	var skips []string
	for l := range strings.SplitSeq(res.stderr, "\n") {
		if strings.Contains(l, `level=ERROR msg="skipping unusable checkpoint"`) {
			skips = append(skips, l)
		}
	}
	if len(skips) != 1 || !strings.Contains(skips[0], chkPath(dir, newest)+":") || !strings.Contains(skips[0], damaged) {
		t.Errorf("want one log line skipping %s for %s, got %q; stderr:\n%s", chkPath(dir, newest), damaged, skips, tail(res.stderr, 3000))
	}
	wantContains(t, res.stderr, fmt.Sprintf("msg=restoring checkpoint=%d path=%s ", older, chkPath(dir, older)))
	after := committed(t, out)
	if x := extras(countLines(demo.Expected(events, demoKeys)), after); len(x) > 0 {
		t.Errorf("the committed output has %d lines too many (duplicates included), first %q", len(x), x[0])
	}
	switch {
	case !ended:
		t.Fatalf("the restarted run neither finished nor failed within 20 s (a restart loop?); stderr (end):\n%s", tail(res.stderr, 2000))
	case res.code == 0:
		if d := demo.Diff(demo.Expected(events, demoKeys), after); d != "" {
			t.Fatalf("restart after skipping chk-%d: %s", newest, d)
		}
		assertNoInProgress(t, out)
	case res.code == 1:
		t.Logf("resuming from chk-%d would duplicate committed output; the run refused: %s", older, lastLine(res.stderr))
		wantContains(t, res.stderr, "already committed")
		if d := demo.Diff(before, after); d != "" {
			t.Errorf("the refused run changed the committed output: %s", d)
		}
	default:
		t.Fatalf("exit code %d, want 0 or 1; stderr:\n%s", res.code, tail(res.stderr, 3000))
	}
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}
