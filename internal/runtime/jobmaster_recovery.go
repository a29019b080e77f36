package runtime

import (
	"context"
	"log/slog"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/dataflow"
)

// TaskRestores is where a job whose mode snapshots each task on its own
// starts (RecoveryMode.InitialRestore): each task's newest snapshot that
// verifies (Latest; a task without one starts fresh), and for each of
// those the same task's other snapshots (Older), which are discarded with
// it once the task completed a newer one (retention per task: the Machine
// discards a task's previous snapshot, and only the newest is its).
type TaskRestores struct {
	Latest map[checkpoint.TaskID]checkpoint.ID
	Older  map[checkpoint.ID][]checkpoint.ID
}

// JobMasterView is what a RecoveryMode reads of the JobMaster to gather
// the job's restore before the loop starts: its storage, graph and
// settings, and where to log. A view, not the *JobMaster, so that the
// driver's fields stay the loop's own.
type JobMasterView interface {
	// Store is the job's checkpoint storage.
	Store() *storage.FS
	// Graph is the job graph.
	Graph() *dataflow.JobGraph
	// AllowNonRestoredState is --allow-non-restored-state.
	AllowNonRestoredState() bool
	// Registered returns the checkpoints registered under high
	// availability; ha is false without it (every completed one counts).
	Registered(ctx context.Context) (ids []checkpoint.ID, ha bool, err error)
	// Location is where checkpoint id lives, for messages; Display a
	// storage path as the user gave it.
	Location(id checkpoint.ID) string
	Display(path string) string
	// CheckOperators fails when checkpoint id (md) holds state of an
	// operator the job does not have, or at another max parallelism.
	CheckOperators(md *checkpoint.Metadata, id checkpoint.ID) error
	Logger() *slog.Logger
}

// jmView is a JobMaster's JobMasterView.
type jmView struct{ jm *JobMaster }

var _ JobMasterView = jmView{}

func (v jmView) Store() *storage.FS               { return v.jm.store }
func (v jmView) Graph() *dataflow.JobGraph        { return v.jm.jg }
func (v jmView) AllowNonRestoredState() bool      { return v.jm.cfg.AllowNonRestoredState }
func (v jmView) Location(id checkpoint.ID) string { return v.jm.checkpointLocation(id) }
func (v jmView) Display(path string) string       { return v.jm.display(path) }
func (v jmView) Logger() *slog.Logger             { return v.jm.log }

func (v jmView) Registered(ctx context.Context) ([]checkpoint.ID, bool, error) {
	reg := v.jm.cfg.registry
	if reg == nil {
		return nil, false, nil
	}
	ids, err := reg.Registered(ctx)
	return ids, true, err
}

func (v jmView) CheckOperators(md *checkpoint.Metadata, id checkpoint.ID) error {
	rp := &restorePoint{md: md, fs: v.jm.store, path: v.jm.checkpointLocation(id), own: true}
	return rp.checkOperators(v.jm.jg, v.jm.cfg.AllowNonRestoredState)
}

// initialTaskRestores gathers the job's start through its mode, before
// the loop. Under high availability a restored snapshot (and its task's
// older ones) is discarded once its task completes a newer one: its
// pointer must go first (unregisterForDiscard), though an earlier leader
// registered it.
func (jm *JobMaster) initialTaskRestores(ctx context.Context, m RecoveryMode) (TaskRestores, error) {
	g, err := m.InitialRestore(ctx, jmView{jm})
	if err != nil {
		return TaskRestores{}, err
	}
	if jm.cfg.registry != nil {
		for _, id := range g.Latest {
			jm.registerTried[id] = true
			for _, o := range g.Older[id] {
				jm.registerTried[o] = true
			}
		}
	}
	return g, nil
}
