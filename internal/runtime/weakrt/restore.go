package weakrt

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/runtime"
)

// A WEAKLY_CONSISTENT job has no checkpoint of all its tasks: each
// completed snapshot is one task's. A restart of the whole job (the local
// process run again on its state folder, a JobManager taking the job over)
// therefore gathers every task's newest snapshot that verifies and deploys
// each task from its own (jobmaster.Config.WeakLatest); a task with none
// starts fresh. The restored executions are later attempts of the earlier
// run's (attempt 1 at least), whose process is gone with their output
// logs, so each rebuilds its logs as a task whose TaskManager was lost
// does (setupWeak: weak.Log.ResumeWith from what its snapshot stored,
// weak.Log.Resume without), and its consumers reconnect at their own
// snapshots' positions: what no stored log covers is counted lost.

// weakRestore is where a WEAKLY_CONSISTENT job starts: each task's newest
// snapshot that verifies, and for each of those the same task's other
// snapshots (older ones a crash left, newer ones that did not verify),
// which are discarded with it once the task completed a newer one
// (retention per task: the Machine discards a task's previous snapshot,
// and only the newest is its). initialRestore hands it to the JobMaster
// as a runtime.TaskRestores.
type weakRestore struct {
	latest map[checkpoint.TaskID]checkpoint.ID
	older  map[checkpoint.ID][]checkpoint.ID
}

// errWeakIncompatible marks a snapshot this job cannot restore whatever
// the other snapshots hold (another mode's checkpoint, a changed graph):
// the job fails to start rather than restore some tasks and not others.
var errWeakIncompatible = errors.New("incompatible task snapshot")

// gatherWeak is the rule of a whole-job restart, over the completed ids in
// storage (ascending): newest first, each id's task is read (taskOf) and,
// the first time a task is seen, the snapshot is verified (verify) and
// becomes the task's restore point; one that does not verify, or whose
// metadata cannot be read, is skipped and reported, and the task's next
// older one is tried. Ids of a task that has its point already are its
// older snapshots; they, and the task's newer ones that did not verify,
// are discarded with the point (older) once the task has a newer
// snapshot. A task with no snapshot that verifies is not in latest: it
// starts fresh. An error wrapping errWeakIncompatible, from taskOf or
// verify, ends the gathering with that error.
func gatherWeak(ids []checkpoint.ID, taskOf func(checkpoint.ID) (checkpoint.TaskID, error), verify func(checkpoint.ID) error) (weakRestore, []error, error) {
	g := weakRestore{latest: map[checkpoint.TaskID]checkpoint.ID{}, older: map[checkpoint.ID][]checkpoint.ID{}}
	var skipped []error
	unusable := map[checkpoint.TaskID][]checkpoint.ID{} // newer than the task's point, not verified
	for i := len(ids) - 1; i >= 0; i-- {
		id := ids[i]
		t, err := taskOf(id)
		if errors.Is(err, errWeakIncompatible) {
			return weakRestore{}, skipped, err
		}
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		if newer, ok := g.latest[t]; ok {
			g.older[newer] = append(g.older[newer], id)
			continue
		}
		if err := verify(id); errors.Is(err, errWeakIncompatible) {
			return weakRestore{}, skipped, err
		} else if err != nil {
			skipped = append(skipped, err)
			unusable[t] = append(unusable[t], id)
			continue
		}
		g.latest[t] = id
		if bad := unusable[t]; len(bad) > 0 {
			g.older[id] = bad
		}
	}
	return g, skipped, nil
}

// weakTaskOf returns the task whose snapshot md is, checking that this
// job can restore it: one task's positions, of a task the job has, at the
// parallelism the job has. A snapshot of an operator the job does not
// have any more is refused unless allowNonRestored, when its task is
// reported as ok=false.
func weakTaskOf(jg *dataflow.JobGraph, md *checkpoint.Metadata, where string, allowNonRestored bool) (t checkpoint.TaskID, ok bool, err error) {
	fresh := "start it in a new state folder (--state-dir) or with a new job name, or run the job as it was"
	var uid string
	var sub int
	var pos *checkpoint.WeakPositions
	var parallelism int
	for _, op := range md.Operators {
		for _, s := range op.Subtasks {
			if s.State.Weak == nil {
				continue
			}
			if pos != nil {
				return t, false, fmt.Errorf("%w: %s holds the positions of two tasks (%q subtask %d and %q subtask %d): it is not a WEAKLY_CONSISTENT task snapshot; %s", errWeakIncompatible, where, uid, sub, op.UID, s.Subtask, fresh)
			}
			uid, sub, pos, parallelism = op.UID, s.Subtask, s.State.Weak, op.Parallelism
		}
	}
	if pos == nil {
		return t, false, fmt.Errorf("%w: %s holds no task's weak positions: it was taken in another execution.checkpointing.mode, and a WEAKLY_CONSISTENT job restores only its tasks' own snapshots; run the job in the mode that took it, or %s", errWeakIncompatible, where, fresh)
	}
	var v *dataflow.Vertex
	for _, x := range jg.Vertices {
		if x.Chain[0].UID == uid {
			v = x
		}
	}
	if v == nil {
		if allowNonRestored {
			return t, false, nil
		}
		return t, false, fmt.Errorf("%w: %s is the snapshot of a task whose first operator has uid %q, and no task of this job starts with that operator: give the operators their old uids and chains, start without that task's state (--allow-non-restored-state), or %s", errWeakIncompatible, where, uid, fresh)
	}
	if parallelism != v.Parallelism || sub < 0 || sub >= v.Parallelism {
		return t, false, fmt.Errorf("%w: %s is the snapshot of subtask %d of %q at parallelism %d, the job has %d: a WEAKLY_CONSISTENT job cannot change a task's parallelism, since each snapshot holds one subtask's channel positions; restore at parallelism %d, or %s", errWeakIncompatible, where, sub, v.Name(), parallelism, v.Parallelism, parallelism, fresh)
	}
	total := 0 // gate channels: every producer subtask of every input
	for _, in := range v.Inputs {
		total += in.From.Parallelism
	}
	if len(pos.Inputs) != total {
		return t, false, fmt.Errorf("%w: %s holds positions for %d input channels of %q, the job has %d (an upstream parallelism or input changed): restore with the graph that took it, or %s", errWeakIncompatible, where, len(pos.Inputs), v.Name(), total, fresh)
	}
	if len(pos.Outputs) > len(v.Outputs) {
		return t, false, fmt.Errorf("%w: %s holds positions for %d output edges of %q, the job has %d: restore with the graph that took it, or %s", errWeakIncompatible, where, len(pos.Outputs), v.Name(), len(v.Outputs), fresh)
	}
	for k, row := range pos.Outputs {
		if n := v.Outputs[k].To.Parallelism; len(row) > n {
			return t, false, fmt.Errorf("%w: %s holds positions for %d consumers of %q's output %d, the job has %d: restore with the graph that took it, or %s", errWeakIncompatible, where, len(row), v.Name(), k, n, fresh)
		}
	}
	return checkpoint.TaskID{Vertex: v.ID, Subtask: sub}, true, nil
}

// initialRestore gathers the restore of a WEAKLY_CONSISTENT job from the
// job's own storage: the registered snapshots under high availability,
// else every completed one. It logs each snapshot skipped, with why, and
// fails on one the job cannot restore (errWeakIncompatible). It runs
// before the JobMaster's loop, so it reads storage directly.
func initialRestore(ctx context.Context, jm runtime.JobMasterView) (runtime.TaskRestores, error) {
	store, log := jm.Store(), jm.Logger()
	ids, err := store.Completed()
	if err != nil {
		return runtime.TaskRestores{}, fmt.Errorf("restore: list the task snapshots in %s: %w", jm.Display(store.JobDir()), err)
	}
	if registered, ha, err := jm.Registered(ctx); err != nil {
		return runtime.TaskRestores{}, fmt.Errorf("restore: list the registered task snapshots: %w", err)
	} else if ha {
		ids = slices.DeleteFunc(ids, func(id checkpoint.ID) bool {
			if slices.Contains(registered, id) {
				return false
			}
			log.Warn(fmt.Sprintf("task snapshot %d has metadata but was never registered (its JobManager lost leadership or crashed before registering): not restored", id), "checkpoint", id, "path", jm.Location(id))
			return true
		})
	}
	mds := map[checkpoint.ID]*checkpoint.Metadata{}
	taskOf := func(id checkpoint.ID) (checkpoint.TaskID, error) {
		where := fmt.Sprintf("task snapshot %s", jm.Location(id))
		md, err := store.ReadMetadata(ctx, id)
		if err != nil {
			return checkpoint.TaskID{}, fmt.Errorf("%s: %w", where, err)
		}
		if md.ID != id {
			return checkpoint.TaskID{}, fmt.Errorf("%s: its metadata is of checkpoint %d", where, md.ID)
		}
		t, ok, err := weakTaskOf(jm.Graph(), md, where, jm.AllowNonRestoredState())
		if err != nil {
			return t, err
		}
		if !ok {
			return t, fmt.Errorf("%s: its task is not in this job; not restored (--allow-non-restored-state)", where)
		}
		mds[id] = md
		return t, nil
	}
	verify := func(id checkpoint.ID) error {
		// LoadLatestOf one id: the metadata decodes and every file it
		// names (state, the stored output logs) has its recorded size
		// and checksum.
		if _, bad, err := store.LoadLatestOf(ctx, []checkpoint.ID{id}); len(bad) == 1 {
			return bad[0] // "checkpoint <dir>: <defect>", without LoadLatest's advice
		} else if err != nil {
			return err
		}
		if err := jm.CheckOperators(mds[id], id); err != nil {
			return fmt.Errorf("%w: %w", errWeakIncompatible, err)
		}
		return nil
	}
	g, skipped, err := gatherWeak(ids, taskOf, verify)
	for _, s := range skipped {
		log.Error("skipping unusable task snapshot", "problem", s)
	}
	if err != nil {
		return runtime.TaskRestores{}, runtime.Unrecoverable(fmt.Errorf("restore: %w", err))
	}
	return runtime.TaskRestores{Latest: g.latest, Older: g.older}, nil
}
