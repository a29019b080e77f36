package app

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/jobstatus"
)

// The weak failover line names each counter in the words, and the
// progress line of a weak run counts task snapshots (failed ones once
// there are) and task restarts, not the job's checkpoints and restarts,
// which repeat them.
func TestWeakLines(t *testing.T) {
	st := &jobstatus.JobStatus{}
	w := &st.Weak
	w.Failures.Store(3)
	w.TaskRestarts.Store(4)
	w.Replayed.Store(1208)
	w.Lost.Store(2)
	w.Duplicated.Store(1)
	w.Dropped.Store(99) // not on the line: lost only if a consumer needs them
	w.SnapshotsCompleted.Store(57)
	const want = "weak failover: 3 failures, 4 task restarts, 1208 replayed, 2 lost, 1 duplicated"
	if got := weakFiguresOf(w).line(); got != want {
		t.Errorf("local line = %q\nwant         %q", got, want)
	}
	// A cluster job's line, from the JobManager's sums, reads the same.
	r := &pb.WeakTaskReport{Failures: 3, Restarts: 4, Replayed: 1208, Lost: 2, Duplicated: 1, Dropped: 99}
	if got := weakFiguresFrom(r).line(); got != want {
		t.Errorf("cluster line = %q\nwant           %q", got, want)
	}

	p := &progress{st: st, weak: true}
	if got, want := p.checkpointLine(), "task snapshots 57  task restarts 4"; got != want {
		t.Errorf("weak progress = %q, want %q", got, want)
	}
	w.SnapshotsFailed.Store(2)
	st.CompletedCheckpoints.Store(1)
	st.Restarts.Store(1)
	if got, want := p.checkpointLine(), "task snapshots 57  failed 2  task restarts 4"; got != want {
		t.Errorf("weak progress with failed snapshots = %q, want %q", got, want)
	}
	if got := p.weakSummary(); got != want {
		t.Errorf("weakSummary = %q, want %q", got, want)
	}
	if s := (&progress{st: st}).weakSummary(); s != "" {
		t.Errorf("weakSummary of a run in another mode = %q, want none", s)
	}
}

// A local run in WEAKLY_CONSISTENT mode (by the mode's name or its alias)
// ends with the weak failover line right after the summary; a run in
// another mode prints none.
func TestRunLocalWeakSummary(t *testing.T) {
	for _, c := range []struct{ mode, want string }{
		{"WEAKLY_CONSISTENT", "weak failover: 0 failures, 0 task restarts, 0 replayed, 0 lost, 0 duplicated\n"},
		{"weakly-consistent", "weak failover: 0 failures, 0 task restarts, 0 replayed, 0 lost, 0 duplicated\n"},
		{"EXACTLY_ONCE", ""},
	} {
		p, _, stderr := testProgram(nil)
		dir := t.TempDir()
		out := filepath.Join(dir, "out")
		code := p.Run(context.Background(), []string{"run", "count", "--events", "500", "--out", out,
			"-D", "state.checkpoints.dir=" + dir, "-D", "execution.checkpointing.mode=" + c.mode})
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.mode, code, stderr)
		}
		wantLines(t, out, 500)
		lines := strings.SplitAfter(stderr.String(), "\n")
		i := 0
		for i < len(lines) && !strings.HasPrefix(lines[i], "ran ") {
			i++
		}
		if i == len(lines) {
			t.Fatalf("%s: no summary in\n%s", c.mode, stderr)
		}
		if has := strings.Contains(stderr.String(), "weak failover:"); has != (c.want != "") {
			t.Errorf("%s: weak failover line present = %v, want %v:\n%s", c.mode, has, !has, stderr)
		}
		if c.want != "" && (i+1 >= len(lines) || lines[i+1] != c.want) {
			t.Errorf("%s: the line after the summary is not %q:\n%s", c.mode, c.want, stderr)
		}
	}
}
