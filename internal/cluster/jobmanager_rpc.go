package cluster

import (
	"context"
	"errors"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/ha"
	"github.com/weirstream/weir/internal/jobstatus"
)

// The client RPCs of the JobManager service: weir run (Submit, Wait),
// list, cancel and checkpoints.

func (m *jobManager) Submit(ctx context.Context, r *pb.SubmitRequest) (*pb.SubmitResponse, error) {
	if err := m.awaitReady(ctx); err != nil {
		return nil, err
	}
	spec := specFromPB(r.GetSpec())
	spec.Fingerprint = [32]byte{}
	if err := spec.Validate(); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	unreserve, err := m.reserve(ctx, spec.Name)
	if err != nil {
		return nil, err
	}
	defer unreserve()
	spec = m.withDefaultStorage(spec)
	j, err := m.start(jobRecord{Spec: spec, State: jobstatus.StateCreated, Submitted: time.Now()}, &submission{rerun: r.GetRerun()})
	if err != nil {
		return nil, submitError(spec.Name, err)
	}
	return &pb.SubmitResponse{Job: j.rec.Spec.Name}, nil
}

// reserve claims name for a submission until unreserve: a job of that
// name must not run, end or be submitted meanwhile. Two JobMasters of one
// name would share its checkpoint folder and its slots, each would see
// only part of its TaskManagers' reports (they are routed by name) and
// never end, and both would write its sinks. A job whose state is
// terminal but whose run has not returned still releases its slots and
// writes its record, which would free the new job's slots and overwrite
// its record: reserve waits for that (moments) within ctx.
func (m *jobManager) reserve(ctx context.Context, name string) (unreserve func(), err error) {
	for {
		m.mu.Lock()
		if m.submitting[name] {
			m.mu.Unlock()
			return nil, status.Errorf(codes.AlreadyExists, "job %s is being submitted by another client", name)
		}
		old := m.jobs[name]
		ending := false
		if old != nil {
			select {
			case <-old.done:
			default:
				st, _ := old.state()
				if !terminalState(st) {
					m.mu.Unlock()
					return nil, status.Errorf(codes.AlreadyExists, "job %s is %s", name, st)
				}
				ending = true
			}
		}
		if !ending {
			m.submitting[name] = true
			m.mu.Unlock()
			return func() {
				m.mu.Lock()
				delete(m.submitting, name)
				m.mu.Unlock()
			}, nil
		}
		m.mu.Unlock()
		select {
		case <-old.done:
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
}

// waitPoll is how often Wait looks at a job's state.
const waitPoll = 100 * time.Millisecond

func (m *jobManager) Wait(r *pb.WaitRequest, s grpc.ServerStreamingServer[pb.JobUpdate]) error {
	if err := m.awaitReady(s.Context()); err != nil {
		return err
	}
	j := m.job(r.GetJob())
	if j == nil {
		return status.Errorf(codes.NotFound, "no job %s on this JobManager: weir list shows the jobs", r.GetJob())
	}
	t := time.NewTicker(waitPoll)
	defer t.Stop()
	last := ""
	for {
		st, failure := j.state()
		terminal := false
		select {
		case <-j.done:
			if next := m.job(r.GetJob()); next != nil && next != j {
				// Rescaled in place: the job runs on as a new run,
				// started before this one's done closed.
				j = next
				continue
			}
			st, failure = j.state()
			terminal = true
		default:
		}
		if key := string(st) + "\x00" + failure; key != last || terminal {
			last = key
			if err := s.Send(&pb.JobUpdate{Job: j.rec.Spec.Name, State: string(st), Failure: failure, Terminal: terminal, Weak: j.weakUpdate()}); err != nil {
				return err
			}
		}
		if terminal {
			return nil
		}
		select {
		case <-s.Context().Done():
			return status.FromContextError(s.Context().Err()).Err()
		case <-m.ctx.Done():
			return status.Error(codes.Unavailable, "the JobManager is shutting down: the job resumes when it is started again")
		case <-j.done:
		case <-t.C:
		}
	}
}

func (m *jobManager) List(ctx context.Context, _ *pb.ListRequest) (*pb.ListResponse, error) {
	if err := m.awaitReady(ctx); err != nil {
		return nil, err
	}
	m.announceREST(ctx)
	m.mu.Lock()
	jobs := make([]*managedJob, 0, len(m.jobs))
	for _, j := range m.jobs {
		jobs = append(jobs, j)
	}
	m.mu.Unlock()
	slices.SortFunc(jobs, func(a, b *managedJob) int { return a.rec.Submitted.Compare(b.rec.Submitted) })
	out := &pb.ListResponse{}
	for _, j := range jobs {
		st, failure := j.state()
		s := &pb.JobSummary{Name: j.rec.Spec.Name, Kind: j.rec.Spec.Kind, State: string(st), StartUnixMillis: j.rec.Submitted.UnixMilli(), Failure: failure}
		if end := j.ended(); !end.IsZero() {
			s.EndUnixMillis = end.UnixMilli()
		}
		out.Jobs = append(out.Jobs, s)
	}
	return out, nil
}

func (m *jobManager) Cancel(ctx context.Context, r *pb.CancelRequest) (*pb.CancelResponse, error) {
	if err := m.awaitReady(ctx); err != nil {
		return nil, err
	}
	j := m.job(r.GetJob())
	if j == nil {
		return nil, status.Errorf(codes.NotFound, "no job %s on this JobManager: weir list shows the jobs", r.GetJob())
	}
	if j.cancel != nil {
		j.canceled.Store(true)
		j.cancel()
	}
	if j.unrecovered != nil {
		// Give the job up for good: its record ends CANCELED.
		j.mu.Lock()
		defer j.mu.Unlock()
		rec := *j.unrecovered
		rec.State, rec.Ended = jobstatus.StateCanceled, time.Now()
		if err := m.store.save(rec); err != nil {
			return nil, status.Errorf(codes.Internal, "cancel job %s: %v", r.GetJob(), err)
		}
		j.rec.State, j.rec.Failure = jobstatus.StateCanceled, ""
		j.unrecovered = nil
	}
	return &pb.CancelResponse{}, nil
}

func (m *jobManager) Checkpoints(ctx context.Context, r *pb.CheckpointsRequest) (*pb.CheckpointsResponse, error) {
	if err := m.awaitReady(ctx); err != nil {
		return nil, err
	}
	j := m.job(r.GetJob())
	if j == nil {
		return nil, status.Errorf(codes.NotFound, "no job %s on this JobManager: weir list shows the jobs", r.GetJob())
	}
	st := j.status
	out := &pb.CheckpointsResponse{
		Completed: st.CompletedCheckpoints.Load(),
		Failed:    st.FailedCheckpoints.Load(),
		Restored:  st.RestoredCheckpoint.Load(),
	}
	for _, c := range st.Checkpoints(time.Now()) {
		out.History = append(out.History, &pb.CheckpointStats{
			Id: int64(c.ID), Kind: c.Kind, Status: c.Status, TriggerUnixMillis: c.TriggerTime.UnixMilli(),
			DurationMillis: c.Duration.Milliseconds(), StateSize: c.StateSize,
			Acknowledged: int32(c.Acknowledged), Subtasks: int32(c.Subtasks), Failure: c.FailureReason, FailureCause: c.FailureCause,
		})
	}
	return out, nil
}

// submitError is the answer to a submission that could not start. A
// fenced write refused because this JobManager's term ended meanwhile
// (its lease expired during the submission) is Unavailable: the job was
// not recorded, and a client that knows the other JobManagers submits
// again to the next leader. Anything else is the submission's fault.
func submitError(job string, err error) error {
	if errors.Is(err, ha.ErrNotLeader) {
		return status.Errorf(codes.Unavailable, "job %s not started: this JobManager lost the leadership during the submission (%v); submit it to the new leader", job, err)
	}
	return status.Error(codes.InvalidArgument, err.Error())
}
