package windows_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/jobs/windows"
)

// rescaleJob is a job the rescale test runs twice: its builder (nil for
// windows.Build), the UID of its keyed operator, and the check of the
// committed output of both runs together.
type rescaleJob struct {
	build func(*weir.Env, windows.Options)
	uid   string
	check func(o windows.Options, lines, late []string) error
}

var windowsJob = rescaleJob{uid: "windows", check: windows.Verify}

var timersJob = rescaleJob{build: buildTimers, uid: "timers", check: func(o windows.Options, lines, _ []string) error {
	if d := diff(timersExpected(o), lines); d != "" {
		return errors.New(d)
	}
	return nil
}}

// TestWindowsRescaleThroughSavepoint takes a savepoint of a rate-limited
// windows job while its windows are open, cancels the job, and restarts
// it from the savepoint at another parallelism (2->3 and 3->1): window
// contents, their event-time timers and the operators' watermarks are
// redistributed by key group, and the committed output of both runs
// together must be exactly the closed form. Heap and lsm.
func TestWindowsRescaleThroughSavepoint(t *testing.T) {
	windowsList := []string{"tumble:50"}
	if *long {
		windowsList = append(windowsList, "slide:60,20", "session:4")
	}
	for _, backend := range []string{"heap", "lsm"} {
		for _, w := range windowsList {
			for _, c := range []struct{ from, to int }{{2, 3}, {3, 1}} {
				if backend == "lsm" && c.from == 3 && !*long {
					// Pebble under -race is slow; the timers' rescale
					// test covers lsm 3->1.
					continue
				}
				t.Run(fmt.Sprintf("%s/%s/%d->%d", backend, w, c.from, c.to), func(t *testing.T) {
					rescaleThroughSavepoint(t, windowsJob, smallOptions(t, w, 4000), backend, c.from, c.to)
				})
			}
		}
	}
}

// TestKeyedProcessTimersRescaleThroughSavepoint is the same for the
// timers job: event-time timers (and a deleted timer's absence) move with
// their key groups.
func TestKeyedProcessTimersRescaleThroughSavepoint(t *testing.T) {
	cases := []struct {
		backend  string
		from, to int
	}{{"heap", 2, 3}, {"lsm", 3, 1}}
	if *long {
		cases = append(cases, struct {
			backend  string
			from, to int
		}{"heap", 3, 1}, struct {
			backend  string
			from, to int
		}{"lsm", 2, 3})
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%d->%d", c.backend, c.from, c.to), func(t *testing.T) {
			rescaleThroughSavepoint(t, timersJob, timerOptions(4000), c.backend, c.from, c.to)
		})
	}
}

func rescaleThroughSavepoint(t *testing.T, job rescaleJob, o windows.Options, backend string, from, to int) {
	t.Helper()
	// Slow enough that the savepoint lands well before the end.
	o.Rate = 4_000
	r := newFRun(t, o, from, backend)
	r.build = job.build
	// No periodic checkpoint: the first run commits exactly what the
	// savepoint covers, so that both runs together must be exact.
	r.interval = "1h"
	var sp string
	first := r.execute(t, context.Background(), func(j *weir.Job) {
		defer j.Cancel()
		deadline := time.Now().Add(time.Minute)
		for j.Stats().SourceRecords < o.Events/3 {
			if time.Now().After(deadline) || j.Stats().State != weir.JobRunning && j.Stats().State != weir.JobCreated {
				t.Errorf("the job made no progress: %+v", j.Stats())
				return
			}
			time.Sleep(time.Millisecond)
		}
		var err error
		for {
			sp, err = j.Savepoint(context.Background(), filepath.Join(t.TempDir(), "savepoints"))
			if !errors.Is(err, weir.ErrNotRunning) || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if err != nil {
			t.Errorf("savepoint: %v", err)
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	if !errors.Is(first.err, context.Canceled) {
		t.Fatalf("first run: %v (want cancelled)\n%.4000s", first.err, first.log)
	}
	if first.readErr != nil {
		t.Fatal(first.readErr)
	}
	want := len(windows.Expected(o))
	if job.uid == "timers" {
		want = len(timersExpected(o))
	}
	if len(first.lines) >= want {
		t.Fatalf("the first run committed %d of %d lines before the savepoint: lower the rate", len(first.lines), want)
	}
	checkOpenState(t, sp, job.uid, from)

	// Resume from the savepoint in a fresh state folder, at the new
	// parallelism, into the same output folder.
	r.p, r.o.Rate, r.interval, r.from = to, 0, "10ms", sp
	r.stateDir = filepath.Join(t.TempDir(), "state2")
	second := r.execute(t, context.Background(), nil)
	if second.err != nil {
		t.Fatalf("resume from the savepoint at parallelism %d: %v\n%.4000s", to, second.err, second.log)
	}
	if second.readErr != nil {
		t.Fatal(second.readErr)
	}
	if second.restored == 0 {
		t.Fatalf("the second run did not restore the savepoint")
	}
	if err := job.check(r.o, second.lines, second.late); err != nil {
		t.Fatalf("both runs' committed output, rescaled %d->%d through a savepoint: %v", from, to, err)
	}
	t.Logf("%d of %d lines committed before the savepoint; exact after resuming at parallelism %d", len(first.lines), want, to)
}

// checkOpenState requires the savepoint to hold keyed state (open windows,
// pending timers) of operator uid at every one of its from subtasks.
func checkOpenState(t *testing.T, path, uid string, from int) {
	t.Helper()
	md, _, err := storage.LoadPath(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if md.Kind != checkpoint.Savepoint {
		t.Fatalf("%s: kind %v, want a savepoint", path, md.Kind)
	}
	op := md.Operator(uid)
	if op == nil {
		t.Fatalf("the savepoint has no state of operator %q", uid)
	}
	if op.Parallelism != from {
		t.Fatalf("the savepoint's %q has parallelism %d, want %d", uid, op.Parallelism, from)
	}
	withState := 0
	for _, s := range op.Subtasks {
		switch k, inc := s.State.Keyed, s.State.Incremental; {
		case k != nil && k.File.Size > 0 && len(k.KeyGroups) > 0:
			withState++
		case inc != nil && inc.Timers != nil && inc.Timers.File.Size > 0:
			withState++
		}
	}
	if withState != from {
		t.Fatalf("%d of %d subtasks of %q hold keyed state and timers in the savepoint: no windows were open", withState, from, uid)
	}
}
