package demo_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/vfs/s3fs/s3test"
)

// TestExactlyOnceUnderFaults runs the demo with failures injected at each
// fault point alone, and at all of them, at parallelism 1, 2 and 3, and
// requires the committed output to equal the failure-free output exactly:
// no line lost, none duplicated, none different.
func TestExactlyOnceUnderFaults(t *testing.T) {
	exactlyOnceUnderFaults(t, map[string]string{"state.backend.type": "heap"})
}

// TestExactlyOnceUnderFaultsLSM is the same with the LSM state backend:
// each restore loads the canonical checkpoint into a fresh store.
func TestExactlyOnceUnderFaultsLSM(t *testing.T) {
	exactlyOnceUnderFaults(t, map[string]string{"state.backend.type": "lsm"})
}

func exactlyOnceUnderFaults(t *testing.T, extra map[string]string) {
	backend := extra["state.backend.type"]
	const (
		k        = 97
		failures = 4
	)
	n := int64(150_000)
	if backend == "lsm" {
		// Every record is a Pebble write, slow under -race; fewer
		// records still give each attempt several checkpoints.
		n = 40_000
	}
	want := demo.Expected(n, k)
	type pointSet struct {
		name   string
		points []faults.Point
	}
	sets := []pointSet{{name: "none"}}
	if backend == "heap" {
		// Each point on its own once; the lsm backend shares every code
		// path but the store, which the "all" set exercises at every
		// point (Pebble under -race is too slow to repeat them all).
		for _, p := range faults.AllPoints() {
			sets = append(sets, pointSet{name: string(p), points: []faults.Point{p}})
		}
	}
	sets = append(sets, pointSet{name: "all", points: faults.AllPoints()})
	// Restores from a checkpoint (not from scratch) over all cases: which
	// failure lands after a completed checkpoint depends on timing, but
	// across the cases many must (about 65 of 72 do; a third at least), or
	// the test proves little.
	fromCheckpoint, restarts := 0, 0
	defer func() {
		if !t.Failed() && 3*fromCheckpoint < restarts {
			t.Errorf("only %d restores came from a checkpoint over all cases; the failures land too early to test restore", fromCheckpoint)
		}
	}()
	for _, ps := range sets {
		for p := 1; p <= 3; p++ {
			t.Run(fmt.Sprintf("%s/p%d", ps.name, p), func(t *testing.T) {
				r := newRun(t, n, k, p)
				r.extra = extra
				// A rate keeps each attempt long enough for checkpoints to
				// complete between failures on an idle machine too (an
				// unthrottled attempt can end in a few milliseconds).
				r.rate = 1_000_000
				if backend == "lsm" {
					// Fewer records at the same rate would end attempts
					// before their first checkpoint.
					r.rate = 200_000
				}
				nf := failures
				if ps.points == nil {
					nf = 0
				} else {
					r.plan = faultPlan(nf, int64(17*p+len(ps.name)), n, ps.points...)
				}
				res := r.execute(t, context.Background(), nil)
				if res.err != nil {
					t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
				}
				if res.inj != nil {
					if got := res.inj.Fired(); got != nf {
						t.Errorf("%d of %d failures fired: %v", got, nf, res.inj.Log())
					}
				}
				if res.restarts != int64(nf) {
					t.Errorf("restarts = %d, want %d (one per injected failure)", res.restarts, nf)
				}
				if res.readErr != nil {
					t.Fatal(res.readErr)
				}
				if d := demo.Diff(want, res.lines); d != "" {
					t.Fatalf("committed output differs from the failure-free run: %s", d)
				}
				restored := strings.Count(res.log.String(), "msg=restoring")
				fromCheckpoint += restored
				restarts += int(res.restarts)
				t.Logf("fired: %v", res.inj.Log())
				t.Logf("%d lines exact, %d restarts (%d from a checkpoint), %d checkpoints completed, %v",
					len(res.lines), res.restarts, restored,
					hooks.Plan(res.env).Status.CompletedCheckpoints.Load(), res.elapsed)
			})
		}
	}
}

// TestExactlyOnceUnderFaultsLSMOnS3 runs the LSM backend with checkpoint
// storage on an in-process S3 server, failures injected at every fault
// point: canonical keyed state files go to S3 and restore into fresh
// stores.
func TestExactlyOnceUnderFaultsLSMOnS3(t *testing.T) {
	const n, k, failures = 40_000, 97, 4 // fewer records: Pebble writes are slow under -race
	srv := s3test.Start(t, "ckpt")
	for p := 2; p <= 3; p++ {
		t.Run(fmt.Sprintf("all/p%d", p), func(t *testing.T) {
			r := s3Run(t, srv, n, k, p)
			r.extra["state.backend.type"] = "lsm"
			r.rate = 1_000_000
			r.plan = faultPlan(failures, int64(43*p), n, faults.AllPoints()...)
			res := r.execute(t, context.Background(), nil)
			if res.err != nil {
				t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
			}
			if res.restarts != failures || res.readErr != nil {
				t.Fatalf("restarts = %d (want %d), read: %v", res.restarts, failures, res.readErr)
			}
			if d := demo.Diff(demo.Expected(n, k), res.lines); d != "" {
				t.Fatalf("committed output differs from the failure-free run: %s", d)
			}
		})
	}
}

// TestExactlyOnceConcurrentCheckpoints (fault class 13): with two
// checkpoints in flight at a time (max-concurrent-checkpoints 2, no
// pause, a trigger every 5 ms), failures at every fault point abort
// checkpoints at every stage of their lives, one of two in flight as
// often as not. The committed output is exact, and once the job ended
// no checkpoint folder is left without its metadata.
func TestExactlyOnceConcurrentCheckpoints(t *testing.T) {
	const n, k, failures = 150_000, 97, 4
	overlapped := 0
	defer func() {
		if !t.Failed() && overlapped == 0 {
			t.Errorf("no run ever had two checkpoints in flight: the test exercised nothing concurrent")
		}
	}()
	for p := 1; p <= 3; p++ {
		t.Run(fmt.Sprintf("p%d", p), func(t *testing.T) {
			r := newRun(t, n, k, p)
			r.interval = "5ms"
			r.extra = map[string]string{config.CheckpointingMaxConcurrent: "2", config.CheckpointingMinPause: "0"}
			r.rate = 1_000_000
			r.plan = faultPlan(failures, int64(71+p), n, faults.AllPoints()...)
			res := r.execute(t, context.Background(), nil)
			if res.err != nil {
				t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
			}
			if res.restarts != failures || res.readErr != nil {
				t.Fatalf("restarts = %d (want %d), read: %v", res.restarts, failures, res.readErr)
			}
			if d := demo.Diff(demo.Expected(n, k), res.lines); d != "" {
				t.Fatalf("committed output differs from the failure-free run: %s", d)
			}
			c := concurrentTriggers(res.log.String())
			overlapped += c
			t.Logf("%d checkpoints completed, %d triggered while another was in flight", hooks.Plan(res.env).Status.CompletedCheckpoints.Load(), c)
			var orphans []string
			chks, _ := filepath.Glob(filepath.Join(r.stateDir, "demo", "chk-*"))
			for _, c := range chks {
				if _, err := os.Stat(filepath.Join(c, "_metadata")); err != nil {
					orphans = append(orphans, c)
				}
			}
			if len(orphans) > 0 {
				t.Errorf("checkpoint folders without metadata after the job ended: %v", orphans)
			}
		})
	}
}

// concurrentTriggers counts the checkpoints triggered while an earlier
// one had not ended (completed or failed), by the log's order.
func concurrentTriggers(log string) int {
	open := map[string]bool{}
	n := 0
	for _, l := range strings.Split(log, "\n") {
		id := logAttr(l, "id")
		switch {
		case strings.Contains(l, `msg="checkpoint triggered"`):
			if len(open) > 0 {
				n++
			}
			open[id] = true
		case strings.Contains(l, `msg="checkpoint completed"`), strings.Contains(l, `msg="checkpoint aborted"`), strings.Contains(l, "msg=restoring"):
			delete(open, id)
			if strings.Contains(l, "msg=restoring") {
				clear(open)
			}
		}
	}
	return n
}

// logAttr is the value of key=value in a text log line, "" if absent.
func logAttr(line, key string) string {
	i := strings.Index(line, " "+key+"=")
	if i < 0 {
		return ""
	}
	v := line[i+len(key)+2:]
	if j := strings.IndexByte(v, ' '); j >= 0 {
		v = v[:j]
	}
	return v
}
