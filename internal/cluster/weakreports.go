package cluster

import (
	"sync"
	"time"

	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/runtime"
)

// weakFigures keeps, for a WEAKLY_CONSISTENT job in cluster mode, the
// failover figures every TaskManager session reported (Heartbeat.weak_jobs):
// each failure, restart, replayed, lost and duplicated record is counted by
// exactly one TaskManager, so the job's figures are their sum. A session
// that ended keeps its last report here, so the figures do not shrink when
// a TaskManager dies; what it counted after its last heartbeat is not
// known.
type weakFigures struct {
	mu    sync.Mutex
	seen  map[*TaskManager]*pb.WeakTaskReport
	final map[*TaskManager]bool // sent its last report (released the job)
}

// update takes one session's report and stores the job's sums into st.
func (w *weakFigures) update(tm *TaskManager, r *pb.WeakTaskReport, final bool, st *jobstatus.WeakStats) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[*TaskManager]*pb.WeakTaskReport{}
		w.final = map[*TaskManager]bool{}
	}
	if w.final[tm] {
		return // a periodic report racing the final one
	}
	prev := w.seen[tm]
	w.seen[tm] = r
	w.final[tm] = final
	var f, t, rep, lost, dup, drop, recs, recNanos int64
	for _, x := range w.seen {
		f += x.GetFailures()
		t += x.GetRestarts()
		rep += x.GetReplayed()
		lost += x.GetLost()
		dup += x.GetDuplicated()
		drop += x.GetDropped()
		recs += x.GetRecoveries()
		recNanos += x.GetRecoveryNanosTotal()
	}
	st.Failures.Store(f)
	st.TaskRestarts.Store(t)
	st.Replayed.Store(rep)
	st.Lost.Store(lost)
	st.Duplicated.Store(dup)
	st.Dropped.Store(drop)
	st.Recoveries.Store(recs)
	st.RecoveryNanos.Store(recNanos)
	// The latest recovery is the one a session measured last: its
	// count of recoveries grew (every report repeats its figures).
	if n := r.GetLastRecoveryNanos(); n > 0 && r.GetRecoveries() > prev.GetRecoveries() {
		st.LastRecoveryNanos.Store(n)
	}
}

// weakFinalTimeout bounds how long a job's end waits for its TaskManagers'
// last figures.
const weakFinalTimeout = 2 * time.Second

// onWeakReports folds a heartbeat's weak figures into their jobs'.
func (m *jobManager) onWeakReports(tm *TaskManager, reports []*pb.WeakJobReport) {
	for _, r := range reports {
		if j := m.job(r.GetJob()); j != nil && j.status != nil {
			j.weak.update(tm, r.GetFigures(), r.GetFinal(), &j.status.Weak)
		}
	}
}

// weakUpdate is the job's figures for a JobUpdate: nil unless a
// TaskManager reported weak figures of it.
func (j *managedJob) weakUpdate() *pb.WeakTaskReport {
	j.weak.mu.Lock()
	seen := len(j.weak.seen) > 0
	j.weak.mu.Unlock()
	if !seen || j.status == nil {
		return nil
	}
	w := &j.status.Weak
	return &pb.WeakTaskReport{Failures: w.Failures.Load(), Restarts: w.TaskRestarts.Load(), Replayed: w.Replayed.Load(), Lost: w.Lost.Load(), Duplicated: w.Duplicated.Load()}
}

// weakJobs are the figures of the WEAKLY_CONSISTENT jobs this TaskManager
// prepared, for its heartbeat.
func (h *executorHandler) weakJobs() []*pb.WeakJobReport {
	te, jobs := h.prepared()
	if te == nil {
		return nil
	}
	var out []*pb.WeakJobReport
	for _, job := range jobs {
		if r := weakJobReport(te, job, false); r != nil {
			out = append(out, r)
		}
	}
	return out
}

// weakJobReport is te's figures of a WEAKLY_CONSISTENT job, nil for
// another job.
func weakJobReport(te *runtime.TaskExecutor, job string, final bool) *pb.WeakJobReport {
	w := te.WeakTotals(job)
	if w == nil {
		return nil
	}
	return &pb.WeakJobReport{Job: job, Final: final, Figures: &pb.WeakTaskReport{
		Failures: w.Failures.Load(), Restarts: w.TaskRestarts.Load(), Replayed: w.Replayed.Load(),
		Lost: w.Lost.Load(), Duplicated: w.Duplicated.Load(), LastRecoveryNanos: w.LastRecoveryNanos.Load(),
		Dropped: w.Dropped.Load(), Recoveries: w.Recoveries.Load(), RecoveryNanosTotal: w.RecoveryNanos.Load(),
	}}
}

// weakToPB is a subtask's figures for its report, nil without.
func weakToPB(w *jobstatus.TaskWeakStats) *pb.WeakTaskReport {
	if w == nil {
		return nil
	}
	return &pb.WeakTaskReport{
		Failures: w.Failures, Restarts: w.Restarts, Replayed: w.Replayed,
		Lost: w.Lost, Duplicated: w.Duplicated, LastRecoveryNanos: w.LastRecovery.Nanoseconds(),
	}
}

// weakFromPB is the inverse of weakToPB.
func weakFromPB(r *pb.WeakTaskReport) *jobstatus.TaskWeakStats {
	if r == nil {
		return nil
	}
	return &jobstatus.TaskWeakStats{
		Failures: r.GetFailures(), Restarts: r.GetRestarts(), Replayed: r.GetReplayed(),
		Lost: r.GetLost(), Duplicated: r.GetDuplicated(), LastRecovery: time.Duration(r.GetLastRecoveryNanos()),
	}
}

// awaitFinal waits, up to timeout, until every TaskManager session that
// reported figures of the job and still runs sent its final report, so
// the job's end carries what was counted to the end.
func (w *weakFigures) awaitFinal(live func(*TaskManager) bool, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for {
		w.mu.Lock()
		done := true
		for tm := range w.seen {
			if !w.final[tm] && live(tm) {
				done = false
			}
		}
		w.mu.Unlock()
		if done || time.Now().After(deadline) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// weakReportInterval is how soon a TaskManager reports changed figures of
// a WEAKLY_CONSISTENT job, between heartbeats: a TaskManager that dies
// takes what it counted since its last report with it.
const weakReportInterval = 200 * time.Millisecond

// reportWeak sends, until stop, the figures of WEAKLY_CONSISTENT jobs that
// changed since they were last sent, in an unasked heartbeat.
func (h *executorHandler) reportWeak(s *JobManagerSession, stop <-chan struct{}) {
	t := time.NewTicker(weakReportInterval)
	defer t.Stop()
	sent := map[string]string{}
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		var changed []*pb.WeakJobReport
		for _, r := range h.weakJobs() {
			key := r.GetFigures().String()
			if sent[r.GetJob()] != key {
				sent[r.GetJob()] = key
				changed = append(changed, r)
			}
		}
		if len(changed) > 0 {
			_ = s.Send(&pb.TaskManagerMessage{Msg: &pb.TaskManagerMessage_Heartbeat{Heartbeat: &pb.Heartbeat{Reports: h.Reports(), WeakJobs: changed}}})
		}
	}
}
