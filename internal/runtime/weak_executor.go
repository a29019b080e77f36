package runtime

import (
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/network/remote"
)

// The TaskExecutor's part of WEAKLY_CONSISTENT mode: the job's
// weakRegistry is its jobRecovery, and the requests and updates only this
// mode has (a remote consumer asking for a channel's log, producers that
// moved, the job's failover totals) arrive here.

// newJobRecovery returns a prepared job's jobRecovery for its mode.
func newJobRecovery(cfg *JobConfig) jobRecovery {
	if cfg.snapshotsOnBarriers() {
		return barrierJobRecovery{}
	}
	return newWeakRegistry(cfg.WeakLogMaxRecords, &cfg.recorder().Weak, cfg.Now)
}

// weakRegistry returns the job's registry in WEAKLY_CONSISTENT mode, nil
// in the others. The job must be prepared.
func (j *teJob) weakRegistry() *weakRegistry {
	r, _ := j.recovery().(*weakRegistry)
	return r
}

var _ jobRecovery = (*weakRegistry)(nil)

// recipients: a notification about checkpoint id goes only to the task
// whose own snapshot id is (another task's snapshot completing says
// nothing about its own, whose transactions must not commit on it).
func (r *weakRegistry) recipients(id checkpoint.ID, all []*execution) []*execution {
	owner, ok := r.ownerOf(id)
	if !ok {
		return nil
	}
	var out []*execution
	for _, e := range all {
		if e.id.Task == owner {
			out = append(out, e)
		}
	}
	return out
}

// addStats adds the task's failover figures to its report.
func (r *weakRegistry) addStats(t checkpoint.TaskID, st *jobstatus.TaskStats) {
	st.Weak = r.taskStats(t)
}

// serveRecoveryRequests makes the data plane's registry answer the
// partition requests of restarted consumers on other TaskManagers for a
// channel's in-flight log (weakRequest).
func (te *TaskExecutor) serveRecoveryRequests(r *remote.PartitionRegistry) {
	r.SetWeakHandler(te.weakRequest)
}

// WeakPeers applies what changed at the other end of the job's channels
// (WEAKLY_CONSISTENT mode): the logs of channels to finished consumers
// discard from now on, and running consumers reconnect their channels
// from moved producers (weakRegistry.peers). It does nothing for a job
// not prepared here, or not in that mode.
func (te *TaskExecutor) WeakPeers(job string, u deployment.WeakPeersUpdate) {
	te.mu.Lock()
	j := te.jobs[job]
	te.mu.Unlock()
	if j == nil {
		return
	}
	apply := func() {
		if reg := j.weakRegistry(); reg != nil {
			if te.cfg.Network != nil {
				// Of two TaskManagers the smaller id dials: one that runs
				// no deployment naming the producer's new one must learn
				// of it here, or the producer's deployment, which waits
				// for a connection from every peer, waits for it.
				for _, m := range u.Moved {
					if m.TM != te.cfg.ID {
						go te.cfg.Network.Conn(j.ctx, string(m.TM), m.DataAddress)
					}
				}
			}
			n := reg.peers(u)
			if len(u.Moved) > 0 {
				te.log.Info("weak: producers moved; reconnecting their consumers' channels", "job", job, "producers", len(u.Moved), "channels", n)
			}
		}
	}
	select {
	case <-j.ready:
		apply()
	default:
		// Still preparing (the update came right behind PrepareJob): the
		// registry takes it in any order with the deployments, which
		// wait for the job on their own goroutines too.
		go func() {
			select {
			case <-j.ready:
				apply()
			case <-j.ctx.Done():
			}
		}()
	}
}

// WeakTotals returns the failover figures this TaskExecutor counted of a
// WEAKLY_CONSISTENT job (the job's status when all its tasks run here),
// nil for another job or one it does not run.
func (te *TaskExecutor) WeakTotals(job string) *jobstatus.WeakStats {
	te.mu.Lock()
	j := te.jobs[job]
	te.mu.Unlock()
	if j == nil {
		return nil
	}
	if reg, ok := j.preparedRecovery().(*weakRegistry); ok {
		return reg.stats
	}
	return nil
}
