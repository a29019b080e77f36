package weir

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/jobstatus"
)

// Job is a running job, returned by Env.Start. Its methods are safe for
// concurrent use.
type Job struct {
	env    *Env
	name   string
	status *jobstatus.JobStatus
	cancel context.CancelFunc
	done   chan struct{}
	err    error // set before done closes
	// control takes Checkpoint, Savepoint and Stop to the running attempt.
	control jobstatus.Control
	// final is the Stats of the ended job, set before done closes: the
	// status is the Env's and starts over when the Env runs again.
	final atomic.Pointer[JobStats]
}

// Name is the name the job was started with.
func (j *Job) Name() string { return j.name }

// Wait blocks until the job ended and returns nil when it FINISHED, a
// *JobFailedError when it failed for good, or the context's error when it
// was cancelled (Cancel, or the ctx given to Start). Any other error means
// the job could not start running, such as a WithRestoreFrom path that cannot
// be read. Wait may be called any number of times.
func (j *Job) Wait() error {
	<-j.done
	return j.err
}

// Done is closed once the job ended; Wait then returns at once.
func (j *Job) Done() <-chan struct{} { return j.done }

// Cancel stops the job at once, without a final checkpoint: its tasks are
// cancelled, open transactions of two-phase-commit sinks stay uncommitted,
// and a later run with the same name resumes from the newest retained
// checkpoint. Wait returns context.Canceled. Cancelling a job that ended
// already does nothing.
func (j *Job) Cancel() { j.cancel() }

// ErrNotRunning is matched (errors.Is) by the error of Checkpoint,
// Savepoint and Stop when no attempt of the job runs to serve them: it has
// not started running yet (Stats().State is CREATED), it is restarting
// after a failure, or it ended. The first two pass; a caller may retry.
var ErrNotRunning = errors.New("job is not running")

// Checkpoint triggers a checkpoint now and returns its id; the checkpoint
// completes or fails later (see Stats). It fails with ErrNotRunning while
// the job is not running (not yet, restarting, or ended).
func (j *Job) Checkpoint(ctx context.Context) (int64, error) {
	id, err := j.control.TriggerCheckpoint(ctx)
	return int64(id), requestError(err)
}

// Savepoint takes a checkpoint now and, once it completed, copies it into
// a new savepoint folder under dir, whose path it returns. The job keeps
// running; a job started with WithRestoreFrom(path) continues from there. It
// fails with ErrNotRunning while the job is not running.
func (j *Job) Savepoint(ctx context.Context, dir string) (string, error) {
	path, err := j.control.TriggerSavepoint(ctx, dir)
	return path, requestError(err)
}

// Stop ends the job gracefully: every source stops reading, a final
// checkpoint is taken, two-phase-commit sinks commit, and the job
// FINISHES (Wait returns nil). With a non-empty savepointDir the final
// checkpoint is also copied into a savepoint folder under it, whose path
// Stop returns, as Flink's stop-with-savepoint. It fails with
// ErrNotRunning while the job is not running; Cancel ends a job in any
// state. If ctx ends while Stop waits for the final checkpoint, Stop
// returns ctx's error but the job, which received the stop, goes on
// stopping: Wait tells how it ended.
func (j *Job) Stop(ctx context.Context, savepointDir string) (string, error) {
	path, err := j.control.StopWithSavepoint(ctx, savepointDir)
	return path, requestError(err)
}

// Rescale asks for new parallelisms: Parallelism (if not 0) for every
// operator whose parallelism follows the job's default (the program did
// not call Stream.Parallelism on it), and Vertices by the UID of an
// operator, for the whole chain that operator runs in; a vertex's entry
// wins over Parallelism. Keyed operators stay within
// pipeline.max-parallelism, the number of key groups.
type Rescale struct {
	Parallelism int
	Vertices    map[string]int
}

// Rescale changes the running job's parallelism in place, as Flink's
// adaptive scheduler does on PUT /jobs/:jobid/resource-requirements: the
// job takes a checkpoint (unaligned if its checkpoints are, the records in
// flight redistributed on restore), is cancelled, and runs again at the
// new parallelism from that checkpoint under the same name and folder,
// state redistributed by key group as on any restore at another
// parallelism. The output is exactly that of a run without the rescale.
// Rescale returns the checkpoint's id once it completed; the job is
// RESTARTING until the new attempt runs. It fails, and the job goes on
// unchanged, when the parallelisms are invalid or the checkpoint fails; with ErrNotRunning while the job does not run.
// (A job on a cluster is rescaled alike through its JobManager: weir
// rescale, or PUT /jobs/{id}/resource-requirements.)
func (j *Job) Rescale(ctx context.Context, r Rescale) (int64, error) {
	rs, ok := j.control.(jobstatus.Rescaler)
	if !ok {
		return 0, errors.New("rescale: this job's control cannot rescale in place")
	}
	res, err := rs.Rescale(ctx, jobstatus.Rescale{Parallelism: r.Parallelism, Vertices: r.Vertices})
	return int64(res.Checkpoint), requestError(err)
}

// requestError makes the runtime's not-running error match ErrNotRunning.
func requestError(err error) error {
	if err != nil && errors.Is(err, jobstatus.ErrNotRunning) {
		return notRunning{err}
	}
	return err
}

// notRunning keeps the runtime's message (naming the job's state) and
// adds ErrNotRunning.
type notRunning struct{ error }

func (e notRunning) Unwrap() error { return e.error }

func (notRunning) Is(target error) bool { return target == ErrNotRunning }

// The states of a job, JobStats.State, with Flink's names. A job is
// CREATED until its first attempt runs, RESTARTING between a failure and
// the next attempt, and ends FINISHED, FAILED or CANCELED.
const (
	JobCreated    = "CREATED"
	JobRunning    = "RUNNING"
	JobRestarting = "RESTARTING"
	JobFinished   = "FINISHED"
	JobFailed     = "FAILED"
	JobCanceled   = "CANCELED"
)

// JobStats is a snapshot of a job's counters.
type JobStats struct {
	// State is the job's state: JobCreated, JobRunning, JobRestarting,
	// JobFinished, JobFailed or JobCanceled.
	State string
	// Started is when the job started running; Ended when it ended (zero
	// while it runs).
	Started, Ended time.Time
	// SourceRecords counts the records sources emitted, replays after a
	// restore included.
	SourceRecords int64
	// Restarts counts the restarts after failures.
	Restarts int64
	// CompletedCheckpoints and FailedCheckpoints count checkpoints.
	CompletedCheckpoints, FailedCheckpoints int64
	// LastCheckpointID is the id of the newest completed checkpoint (0:
	// none yet).
	LastCheckpointID int64
	// LastCheckpointDuration is its trigger-to-completion time.
	LastCheckpointDuration time.Duration
	// LastCheckpointSize is the bytes it persisted itself (for an
	// incremental checkpoint, the files it uploaded).
	LastCheckpointSize int64
	// RestoredCheckpoint is the checkpoint the current attempt restored
	// from (0: none).
	RestoredCheckpoint int64
	// LastFailure is the most recent failure's cause ("" : none).
	LastFailure string
}

// Stats returns a snapshot of the job's counters. Once the job ended
// (Done is closed), its State is FINISHED, FAILED or CANCELED, Ended is
// set, and the figures no longer change.
func (j *Job) Stats() JobStats {
	if f := j.final.Load(); f != nil {
		return *f
	}
	return j.live()
}

// ended records the final Stats. A job that failed or was cancelled
// before the runtime ran it (a WithRestoreFrom path that cannot be read)
// has no final state in the status: it gets one here, so that no ended
// job reports CREATED.
func (j *Job) ended(err error) {
	st := j.live()
	switch st.State {
	case JobFinished, JobFailed, JobCanceled:
	default:
		switch {
		case err == nil:
			st.State = JobFinished
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			st.State = JobCanceled
		default:
			st.State = JobFailed
			if st.LastFailure == "" {
				st.LastFailure = err.Error()
			}
		}
		if st.Ended.IsZero() {
			st.Ended = time.Now()
		}
	}
	j.final.Store(&st)
}

// live reads the running job's counters from the status.
func (j *Job) live() JobStats {
	s := j.status
	start, end := s.Times()
	return JobStats{
		State:                  string(s.State()),
		Started:                start,
		Ended:                  end,
		SourceRecords:          s.SourceRecords.Load(),
		Restarts:               s.Restarts.Load(),
		CompletedCheckpoints:   s.CompletedCheckpoints.Load(),
		FailedCheckpoints:      s.FailedCheckpoints.Load(),
		LastCheckpointID:       s.LastCheckpointID.Load(),
		LastCheckpointDuration: time.Duration(s.LastCheckpointDuration.Load()),
		LastCheckpointSize:     s.LastCheckpointSize.Load(),
		RestoredCheckpoint:     s.RestoredCheckpoint.Load(),
		LastFailure:            s.LastFailure(),
	}
}
