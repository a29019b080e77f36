package jobmaster

import (
	"log/slog"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/coordinator"
	"github.com/weirstream/weir/internal/restart"
)

// Config describes the job a Machine runs.
type Config struct {
	// Name is the job's name, for messages.
	Name string
	// Regions are the job's pipelined regions (runtime.Regions).
	Regions [][]checkpoint.TaskID
	// Tasks are every subtask, in the order of the coordinator's states;
	// Sources those a barrier goes to.
	Tasks   []checkpoint.TaskID
	Sources []checkpoint.TaskID
	// Checkpoint configures the coordinator.
	Checkpoint coordinator.Config
	// Restart decides whether a failure restarts.
	Restart restart.Strategy
	// Placement places logical slots.
	Placement Placement
	// TaskManagers are prepared at Start (local mode: every executor);
	// empty, each is prepared before its first deployment.
	TaskManagers []TM
	// SlotTimeout is how long a deployment waits for slots before the job
	// fails (slot.request.timeout).
	SlotTimeout time.Duration
	// FirstAttempt numbers the first executions.
	FirstAttempt int
	// Initial is the restore point of the job's start (nil: fresh).
	Initial *RestorePoint
	// FirstOwn is the first checkpoint id this run takes: a restart
	// restores the newest checkpoint at least this new, else Initial.
	FirstOwn checkpoint.ID
	// WeakLatest (Config.Weak) is each task's newest completed snapshot
	// in the job's own storage when it starts, below FirstOwn: a restart
	// of the whole job deploys every task from its own (Restore{ID, Own}),
	// a task not in it from Initial. A task's first snapshot of this run
	// discards its entry, as it discards any previous snapshot.
	WeakLatest map[checkpoint.TaskID]checkpoint.ID
	// Reserve enables checkpoint-id reservation; Reserved is the bound
	// persisted before this run.
	Reserve  bool
	Reserved checkpoint.ID
	// Register is set under high availability: a checkpoint whose
	// metadata is written is complete only once its pointer is registered
	// (RegisterCheckpoint, answered by Registered), and nothing about it
	// is told before. False, a written metadata completes it (StoreDone).
	Register bool
	// Weak selects WEAKLY_CONSISTENT (execution.checkpointing.mode): no
	// barriers; each task snapshots on its own schedule and restarts
	// alone from its own newest snapshot. Regions is ignored (every task
	// is its own region), Checkpoint's Interval and Timeout apply per
	// task, and savepoints are refused. See weak.go.
	Weak bool
	// Logger; nil is silent.
	Logger *slog.Logger
}
