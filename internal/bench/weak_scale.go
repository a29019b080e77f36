package bench

// bench weak's scale section: many keyed tasks, each of whose snapshots
// fails with a probability, measured on real runs.
//
// The failures are state files that fail to be created (the checkpoint
// filesystem, hooks.Plan(env).CheckpointFS), not internal/faults' points:
// an injected snapshot-sync or snapshot-async fault fails its task, which
// in a barrier mode restarts the whole job, while what is measured here
// is a snapshot that fails and nothing else. A write that fails declines
// the task's snapshot: the checkpoint fails in EXACTLY_ONCE and
// AT_LEAST_ONCE, only that task's snapshot in WEAKLY_CONSISTENT. The
// error is not a storage failure (storage.IsStorageFailure), so barrier
// checkpoints do not back off.

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/vfs"
)

// errSnapshotWrite is the injected failure of a state file.
var errSnapshotWrite = errors.New("bench weak: injected snapshot write failure")

// snapshotFailer fails the creation of a keyed state file with
// probability p. The draw is a hash of the file's checkpoint folder and
// name with a seed, so every task snapshot (one state file per keyed
// task) gets its own independent draw and a retry of the same file would
// get the same answer.
type snapshotFailer struct {
	p     float64
	seed  uint64
	files atomic.Int64
	fails atomic.Int64
}

func (f *snapshotFailer) MaybeError(op vfs.Op, path string) error {
	if op != vfs.OpCreate || !strings.HasSuffix(path, ".keyed") {
		return nil
	}
	f.files.Add(1)
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%s", f.seed, filepath.Base(filepath.Dir(path)), filepath.Base(path))
	if float64(mix64(h.Sum64())>>11)/float64(1<<53) < f.p {
		f.fails.Add(1)
		return errSnapshotWrite
	}
	return nil
}

// runWeakScale runs source -> key by -> count at p=scaleTasks in one mode
// with snapshotFailer under the checkpoints.
func runWeakScale(o weakOptions, mode string) (weakChild, error) {
	r := weakChild{Section: sectionScale, Mode: mode}
	env, cleanup, err := newWeakEnv(mode, o.scaleInterval, map[string]string{
		config.ParallelismDefault: "1",
		// A failed snapshot is what is measured, never a reason to fail
		// over.
		config.CheckpointingTolerableFailures: "1000000",
	})
	if err != nil {
		return r, err
	}
	defer cleanup()
	failer := &snapshotFailer{p: o.scaleFailure, seed: 1}
	hooks.Plan(env).CheckpointFS = vfs.WithErrors(vfs.OS{}, failer)
	src := weir.FromSource(env, func() weir.Source[loadRecord] {
		return &timedSource{rate: 2000, keys: int64(16 * o.scaleTasks), duration: o.duration}
	}).Name("source").UID("source")
	counts := weir.Process(weir.KeyBy(src, recordKey), func() weir.KeyedProcessFunction[int64, loadRecord, loadRecord] {
		return &keyedCount{}
	}).Name("count").UID("count").Parallelism(o.scaleTasks)
	weir.SinkTo(counts, func() weir.Sink[loadRecord] { return discard[loadRecord]{} }).Name("discard").UID("discard").Parallelism(o.scaleTasks)

	status := hooks.Plan(env).Status
	coll := collectCheckpoints(status)
	t0 := time.Now()
	err = env.Execute(context.Background(), "bench-weak-scale")
	r.RunSeconds = time.Since(t0).Seconds()
	cps := coll.finish()
	if err != nil {
		return r, fmt.Errorf("scale, mode %s: %w", mode, err)
	}
	fillCheckpoints(&r, cps, status, mode)
	r.InjectedFiles, r.InjectedFailures = failer.files.Load(), failer.fails.Load()
	if mode == modeWeak {
		// Every task's snapshots: the keyed tasks' and the source's
		// (which writes no state file and so never fails), the final
		// ones included.
		r.Completed, r.Failed = r.Weak.SnapshotsCompleted, r.Weak.SnapshotsFailed
	} else {
		// Periodic checkpoints only: the final one at the end is not
		// what a running job's success rate is about, and the
		// collector keeps only completed periodic ones.
		r.Completed, r.Failed = int64(len(cps)), status.FailedCheckpoints.Load()
		r.Failed -= failedNonPeriodic(status)
	}
	r.Triggered = r.Completed + r.Failed
	if r.Triggered > 0 {
		r.Share = float64(r.Completed) / float64(r.Triggered)
	}
	return r, nil
}

// failedNonPeriodic counts the failed checkpoints in the job's history
// that were not periodic (the final checkpoint), so that the share is
// over periodic checkpoints only. The history holds the last ten, which
// is where a final checkpoint is.
func failedNonPeriodic(s *jobstatus.JobStatus) int64 {
	var n int64
	for _, c := range s.Checkpoints(time.Now()) {
		if c.Status == jobstatus.CheckpointFailed && c.Kind != "periodic" {
			n++
		}
	}
	return n
}

// mix64 is splitmix64's finalizer: FNV-1a's high bits of names that
// differ in a digit or two are far from uniform (a first version drew
// 0.5 % failures for 2 %), the mixed ones are.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
