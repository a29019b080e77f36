package runtime

import (
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/jobstatus"
)

// jobRecovery is the TaskExecutor's part of a job's consistency mode, as
// recovery (task_recovery.go) is the task's: the barrier modes need
// nothing of it and hold barrierJobRecovery; the mode that recovers one
// task at a time from its producers' in-flight logs keeps those logs
// here, across the attempts of both ends of each channel, and follows
// executions' ends, checkpoint notifications and the figures a report
// carries. Made once per job when it is prepared (newJobRecovery).
type jobRecovery interface {
	// ended is told of an execution's end before the JobMaster hears of
	// it.
	ended(exec deployment.ExecutionID, failed bool)
	// recipients returns which of the job's executions all hear of
	// checkpoint id's completion or abort.
	recipients(id checkpoint.ID, all []*execution) []*execution
	// addStats adds the mode's figures of task to its report.
	addStats(task checkpoint.TaskID, st *jobstatus.TaskStats)
}

// barrierJobRecovery is jobRecovery in the barrier modes: every task
// hears of every checkpoint, and nothing else is kept.
type barrierJobRecovery struct{}

func (barrierJobRecovery) ended(deployment.ExecutionID, bool) {}
func (barrierJobRecovery) recipients(_ checkpoint.ID, all []*execution) []*execution {
	return all
}
func (barrierJobRecovery) addStats(checkpoint.TaskID, *jobstatus.TaskStats) {}

// recovery returns the job's jobRecovery. The job must be prepared.
func (j *teJob) recovery() jobRecovery {
	j.recOnce.Do(func() { j.rec = newJobRecovery(&j.prep.Config) })
	return j.rec
}

// preparedRecovery is recovery for a job that may not be prepared yet
// (or failed to be): barrierJobRecovery until it is.
func (j *teJob) preparedRecovery() jobRecovery {
	select {
	case <-j.ready:
		if j.prep != nil {
			return j.recovery()
		}
	default:
	}
	return barrierJobRecovery{}
}

// recipients returns the executions of job that hear of checkpoint id.
func (te *TaskExecutor) recipients(job string, id checkpoint.ID) []*execution {
	all := te.lookup(job, nil)
	te.mu.Lock()
	j := te.jobs[job]
	te.mu.Unlock()
	if j == nil {
		return all
	}
	return j.preparedRecovery().recipients(id, all)
}
