package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/jobstatus"
)

// JobControl takes a job's commands (jobstatus.Control) to the JobMaster
// driver that runs its current attempt: the driver's loop selects on its
// requests next to its inbox and timers (jobmaster.go, run) and answers
// each once the Machine did (jobmaster_perform.go, Answer). One JobControl
// lives as long as the job's status, across the attempts of a run and the
// runs of an Env, so that a caller holds it before the job starts; a
// command while no attempt runs fails with jobstatus.ErrNotRunning.
type JobControl struct {
	status   *jobstatus.JobStatus
	requests chan triggerRequest
}

// NewJobControl returns the control of the job whose status is st
// (JobConfig.Control; the same st as JobConfig.Status).
func NewJobControl(st *jobstatus.JobStatus) *JobControl {
	return &JobControl{status: st, requests: make(chan triggerRequest)}
}

var (
	_ jobstatus.Control  = (*JobControl)(nil)
	_ jobstatus.Rescaler = (*JobControl)(nil)
)

// requestKind says what an external request asks of the running job.
type requestKind uint8

const (
	reqCheckpoint requestKind = iota
	reqSavepoint
	reqStop
	// reqRescale stops the attempt on a final checkpoint and deploys the
	// job again at new parallelisms (rescale.go).
	reqRescale
)

type triggerRequest struct {
	kind    requestKind
	target  string            // savepoint folder
	rescale jobstatus.Rescale // reqRescale's parallelisms
	reply   chan triggerReply
}

type triggerReply struct {
	id       checkpoint.ID
	path     string // savepoint folder
	rescaled jobstatus.RescaleResult
	err      error
}

// TriggerCheckpoint asks the running job for a checkpoint now and returns
// its id (jobstatus.Control).
func (c *JobControl) TriggerCheckpoint(ctx context.Context) (checkpoint.ID, error) {
	r := c.request(ctx, triggerRequest{kind: reqCheckpoint})
	return r.id, r.err
}

// TriggerSavepoint takes a checkpoint now and copies it into a savepoint
// folder under target, whose path it returns (jobstatus.Control).
func (c *JobControl) TriggerSavepoint(ctx context.Context, target string) (string, error) {
	if target == "" {
		return "", errors.New("savepoint: no target folder")
	}
	r := c.request(ctx, triggerRequest{kind: reqSavepoint, target: target})
	return r.path, r.err
}

// StopWithSavepoint stops the job gracefully, with a final savepoint under
// target if it is not empty (jobstatus.Control).
func (c *JobControl) StopWithSavepoint(ctx context.Context, target string) (string, error) {
	r := c.request(ctx, triggerRequest{kind: reqStop, target: target})
	return r.path, r.err
}

// request hands req to the running attempt and waits for its reply.
func (c *JobControl) request(ctx context.Context, req triggerRequest) triggerReply {
	if st := c.status.State(); st != jobstatus.StateRunning {
		return triggerReply{err: fmt.Errorf("%w (it is %s)", jobstatus.ErrNotRunning, st)}
	}
	req.reply = make(chan triggerReply, 1)
	select {
	case c.requests <- req:
	case <-ctx.Done():
		return triggerReply{err: ctx.Err()}
	case <-time.After(5 * time.Second):
		return triggerReply{err: jobstatus.ErrNotRunning}
	}
	select {
	case r := <-req.reply:
		return r
	case <-ctx.Done():
		return triggerReply{err: ctx.Err()}
	}
}
