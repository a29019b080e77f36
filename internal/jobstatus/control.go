package jobstatus

import (
	"context"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
)

// Control takes commands for a running job: a checkpoint, a savepoint, a
// stop. The runtime implements it (runtime.JobControl, served by the
// JobMaster driver of the running attempt); the callers that command a
// job — the REST API's POST endpoints, weir.Job, the CLI — get one
// explicitly, next to the job's status, which only reads.
//
// Every method fails with ErrNotRunning (errors.Is) while no attempt of
// the job runs: not yet, restarting after a failure, or ended.
type Control interface {
	// TriggerCheckpoint asks the running job for a checkpoint now (as
	// Flink's POST /jobs/:jobid/checkpoints) and returns its id; the
	// checkpoint completes or fails later (see JobStatus.Checkpoints). It
	// fails with the coordinator's reason when it cannot trigger (too many
	// checkpoints in progress).
	TriggerCheckpoint(ctx context.Context) (checkpoint.ID, error)
	// TriggerSavepoint takes a checkpoint now and, once it completed,
	// copies it into a savepoint folder under target (as Flink's POST
	// /jobs/:jobid/savepoints); it returns that folder. The job keeps
	// running.
	TriggerSavepoint(ctx context.Context, target string) (string, error)
	// StopWithSavepoint stops the job gracefully (as Flink's stop): every
	// source stops reading, the final checkpoint is taken,
	// two-phase-commit sinks commit, and the job finishes. With a target,
	// that final checkpoint is also copied into a savepoint folder under
	// target, whose path it returns; a job started from it later
	// continues where this one stopped.
	StopWithSavepoint(ctx context.Context, target string) (string, error)
}

// Rescale asks a running job for new parallelisms (Flink's PUT
// /jobs/:jobid/resource-requirements): Parallelism, if not 0, for every
// vertex whose parallelism follows the job's default (the program did not
// set it), and Vertices by the uid of any operator in the vertex, which
// wins over Parallelism.
type Rescale struct {
	Parallelism int            `json:"parallelism,omitempty"`
	Vertices    map[string]int `json:"vertices,omitempty"`
	// ByVertex sets vertices by their id (VertexInfo.ID), as REST
	// names them; it wins over both.
	ByVertex map[int]int `json:"by_vertex,omitempty"`
}

// RescaleResult says how a rescale went: the final checkpoint the job
// stopped on, and the parallelism of every vertex it now deploys, by
// vertex name.
type RescaleResult struct {
	Checkpoint  checkpoint.ID  `json:"checkpoint"`
	Parallelism map[string]int `json:"parallelism"`
}

// Rescaler is a Control that can rescale the running job in place: it
// takes a checkpoint (unaligned when the job's are; records in flight are
// redistributed on restore), cancels the attempt and deploys the job
// again at the new parallelism from that checkpoint, in the same run
// (same job, same checkpoint folder and ids, same transactional
// identities of its sinks). Rescale returns once the checkpoint
// completed and the redeployment began; it fails, leaving the job as it
// was, when the new parallelisms are not valid (naming the vertex and
// the bound) or when the checkpoint fails. Not every deployment
// can: a Control that is not a Rescaler cannot.
type Rescaler interface {
	Rescale(ctx context.Context, r Rescale) (RescaleResult, error)
}

// RescaleRecord is an in-place rescale carried out: when it was asked
// for, the checkpoint the job was deployed again from, the parallelism
// of every vertex it runs at now (by name), and the pause: from the
// request until every task of the new deployment was running.
type RescaleRecord struct {
	At          time.Time      `json:"at"`
	Checkpoint  checkpoint.ID  `json:"checkpoint"`
	Parallelism map[string]int `json:"parallelism"`
	Pause       time.Duration  `json:"-"`
	PauseMs     int64          `json:"pause_ms"`
}

// Rescaled records a rescale carried out (the latest one is kept).
func (r *Recorder) Rescaled(rec RescaleRecord) {
	rec.PauseMs = rec.Pause.Milliseconds()
	m := (*JobStatus)(r).mon()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lastRescale = &rec
}

// LastRescale returns the latest in-place rescale carried out in this
// run of the job, nil if none.
func (s *JobStatus) LastRescale() *RescaleRecord {
	m := s.mon()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lastRescale == nil {
		return nil
	}
	rec := *m.lastRescale
	return &rec
}
