package cluster

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/runtime"
)

// executorHandler is a TaskManager's TaskManagerHandler: one
// runtime.TaskExecutor per JobManager session, whose reports go back on
// that session. When the session ends the executor is closed (every task
// cancelled and waited for) before the TaskManager registers again, so no
// task outlives the JobManager that deployed it.
type executorHandler struct {
	newExecutor func(jm deployment.JobMasterGateway) *runtime.TaskExecutor
	log         *slog.Logger
	// stuck is closed when a task did not stop within
	// task.cancellation.timeout (nil: never): closing the executor then
	// stops waiting for it, and the process exits with the error.
	stuck <-chan struct{}

	mu   sync.Mutex
	te   *runtime.TaskExecutor
	jobs map[string]bool // prepared on te, for heartbeat reports
	// stopWeak ends the session's reportWeak.
	stopWeak chan struct{}
}

var _ TaskManagerHandler = (*executorHandler)(nil)

func (h *executorHandler) executor() *runtime.TaskExecutor {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.te
}

func (h *executorHandler) Registered(s *JobManagerSession) {
	te := h.newExecutor(sessionJobMaster{s: s})
	stop := make(chan struct{})
	h.mu.Lock()
	h.te, h.jobs, h.stopWeak = te, map[string]bool{}, stop
	h.mu.Unlock()
	go h.reportWeak(s, stop)
}

func (h *executorHandler) Disconnected(s *JobManagerSession, reason error) {
	h.mu.Lock()
	te := h.te
	h.te, h.jobs = nil, nil
	if h.stopWeak != nil {
		close(h.stopWeak)
		h.stopWeak = nil
	}
	h.mu.Unlock()
	if te == nil {
		return
	}
	h.log.Warn("cancelling every task: the JobManager session ended", "reason", reason)
	closed := make(chan struct{})
	go func() { te.Close(); close(closed) }()
	select {
	case <-closed:
	case <-h.stuck:
		// A task ignores its cancellation: the process exits (goroutines
		// cannot be killed), and never registers again with it running.
	}
}

// Close cancels every task of the current session and waits for them.
func (h *executorHandler) Close() { h.Disconnected(nil, context.Canceled) }

// prepared returns the session's executor and the jobs prepared on it.
func (h *executorHandler) prepared() (*runtime.TaskExecutor, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	jobs := make([]string, 0, len(h.jobs))
	for j := range h.jobs {
		jobs = append(jobs, j)
	}
	return h.te, jobs
}

func (h *executorHandler) Reports() []*pb.TaskReport {
	te, jobs := h.prepared()
	if te == nil {
		return nil
	}
	var out []*pb.TaskReport
	for _, job := range jobs {
		for _, st := range te.Report(job) {
			out = append(out, &pb.TaskReport{
				Job:                      job,
				Exec:                     execToPB(deployment.ExecutionID{Task: checkpoint.TaskID{Vertex: st.Vertex, Subtask: st.Subtask}}),
				RecordsIn:                st.RecordsIn,
				RecordsOut:               st.RecordsOut,
				BackPressured:            st.BackPressured,
				AlignmentTimeNanos:       st.AlignmentTime.Nanoseconds(),
				CreditsAvailable:         int64(st.CreditsAvailable),
				InputWatermark:           &st.InputWatermark,
				OutputWatermark:          &st.OutputWatermark,
				LateRecordsDropped:       st.LateRecordsDropped,
				Weak:                     weakToPB(st.Weak),
				BusyNanos:                int64(st.Time.Busy),
				IdleNanos:                int64(st.Time.Idle),
				BackPressuredNanos:       int64(st.Time.BackPressured),
				BusyMsPerSecond:          st.Time.BusyMsPerSecond,
				IdleMsPerSecond:          st.Time.IdleMsPerSecond,
				BackPressuredMsPerSecond: st.Time.BackPressuredMsPerSecond,
				Gauges:                   gaugesToPB(st.Gauges),
			})
		}
	}
	return out
}

func (h *executorHandler) PrepareJob(_ *JobManagerSession, m *pb.PrepareJob) {
	te := h.executor()
	if te == nil {
		return
	}
	spec := specFromPB(m.GetSpec())
	h.mu.Lock()
	if h.jobs != nil {
		h.jobs[spec.Name] = true
	}
	h.mu.Unlock()
	te.PrepareJob(spec, m.GetDescription())
}

func (h *executorHandler) ReleaseJob(s *JobManagerSession, m *pb.ReleaseJob) {
	if te := h.executor(); te != nil {
		final := weakJobReport(te, m.GetJob(), true)
		h.mu.Lock()
		delete(h.jobs, m.GetJob())
		h.mu.Unlock()
		te.ReleaseJob(m.GetJob())
		if final != nil {
			// The job's last figures from here, unasked: the JobManager
			// waits for them before it reports the job's end.
			_ = s.Send(&pb.TaskManagerMessage{Msg: &pb.TaskManagerMessage_Heartbeat{Heartbeat: &pb.Heartbeat{Reports: h.Reports(), WeakJobs: []*pb.WeakJobReport{final}}}})
		}
	}
}

func (h *executorHandler) Deploy(_ *JobManagerSession, m *pb.Deploy) {
	if te := h.executor(); te != nil {
		te.Deploy(deployFromPB(m))
	}
}

func (h *executorHandler) Cancel(_ *JobManagerSession, m *pb.CancelTasks) {
	if te := h.executor(); te != nil {
		te.Cancel(m.GetJob(), execsFromPB(m.GetExecs()))
	}
}

func (h *executorHandler) Trigger(_ *JobManagerSession, m *pb.Trigger) {
	if te := h.executor(); te != nil {
		te.Trigger(m.GetJob(), execFromPB(m.GetExec()), barrierFromPB(m))
	}
}

func (h *executorHandler) NotifyComplete(_ *JobManagerSession, m *pb.NotifyComplete) {
	te := h.executor()
	switch {
	case te == nil:
	case m.Kind == nil:
		// A JobManager of an older version does not say the kind.
		te.NotifyCompleteOfUnknownKind(m.GetJob(), checkpoint.ID(m.GetCheckpointId()))
	default:
		te.NotifyComplete(m.GetJob(), checkpoint.ID(m.GetCheckpointId()), kindFromPB(m.GetKind()))
	}
}

func (h *executorHandler) NotifyAborted(_ *JobManagerSession, m *pb.NotifyAborted) {
	if te := h.executor(); te != nil {
		te.NotifyAborted(m.GetJob(), checkpoint.ID(m.GetCheckpointId()))
	}
}

func (h *executorHandler) StopSources(_ *JobManagerSession, m *pb.StopSources) {
	if te := h.executor(); te != nil {
		te.StopSources(m.GetJob(), execsFromPB(m.GetExecs()))
	}
}

func (h *executorHandler) WeakPeers(_ *JobManagerSession, m *pb.WeakPeers) {
	te := h.executor()
	if te == nil {
		return
	}
	var u deployment.WeakPeersUpdate
	for _, c := range m.GetMoved() {
		u.Moved = append(u.Moved, channelFromPB(c))
	}
	for _, x := range execsFromPB(m.GetFinished()) {
		u.Finished = append(u.Finished, x.Task)
	}
	te.WeakPeers(m.GetJob(), u)
}

// sessionJobMaster is the TaskExecutor's JobMasterGateway over the
// session: each report is one message on the stream, in order. A report
// sent after the session ended is dropped; the tasks are being cancelled.
type sessionJobMaster struct {
	s *JobManagerSession
}

func (g sessionJobMaster) send(m *pb.TaskManagerMessage) { _ = g.s.Send(m) }

func (g sessionJobMaster) JobPrepared(job string, err error) {
	g.send(&pb.TaskManagerMessage{Msg: &pb.TaskManagerMessage_JobPrepared{JobPrepared: &pb.JobPrepared{
		Job: job, Error: errText(err), Unrecoverable: err != nil,
	}}})
}

func (g sessionJobMaster) TaskStateChanged(job string, exec deployment.ExecutionID, st deployment.ExecState, err error) {
	g.send(g.stateMessage(job, exec, st, err))
}

// stateMessage is a TaskStateChanged report: the failure's text and what
// the JobManager acts on (unrecoverable, a lost transaction).
func (sessionJobMaster) stateMessage(job string, exec deployment.ExecutionID, st deployment.ExecState, err error) *pb.TaskManagerMessage {
	return &pb.TaskManagerMessage{Msg: &pb.TaskManagerMessage_TaskStateChanged{TaskStateChanged: &pb.TaskStateChanged{
		Job: job, Exec: execToPB(exec), State: stateToPB(st), Error: errText(err), Unrecoverable: err != nil && runtime.IsUnrecoverable(err),
		TransactionLost: errors.Is(err, dataflow.ErrTransactionLost),
	}}}
}

func (g sessionJobMaster) Acknowledge(job string, exec deployment.ExecutionID, id checkpoint.ID, st checkpoint.TaskState) {
	b, err := taskStateToPB(st)
	if err != nil {
		g.Decline(job, exec, id, "encode task state: "+err.Error(), false)
		return
	}
	g.send(&pb.TaskManagerMessage{Msg: &pb.TaskManagerMessage_Acknowledge{Acknowledge: &pb.Acknowledge{
		Job: job, Exec: execToPB(exec), CheckpointId: int64(id), TaskState: b,
	}}})
}

func (g sessionJobMaster) Decline(job string, exec deployment.ExecutionID, id checkpoint.ID, reason string, storage bool) {
	g.send(&pb.TaskManagerMessage{Msg: &pb.TaskManagerMessage_Decline{Decline: &pb.Decline{
		Job: job, Exec: execToPB(exec), CheckpointId: int64(id), Reason: reason, Storage: storage,
	}}})
}

func (g sessionJobMaster) EndOfData(job string, exec deployment.ExecutionID) {
	g.send(&pb.TaskManagerMessage{Msg: &pb.TaskManagerMessage_EndOfData{EndOfData: &pb.EndOfData{Job: job, Exec: execToPB(exec)}}})
}
