// Package fakejm is a stand-in JobManager for tests of clients and of the
// app package: a real gRPC Dispatcher whose client RPCs run each submitted
// job in the test process (resolve the spec, then runtime.Execute), so
// that `run --jobmanager`, list, cancel and checkpoints can be tested end
// to end before, and independently of, the real JobManager. It has no
// TaskManagers: the job runs on the local runtime.
//
// Owns: the stand-in JobManager of client tests. Must not touch: production
// code paths.
package fakejm

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weirstream/weir/internal/cluster"
	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/runtime"
)

// JobManager serves the client RPCs on Addr until the test ends.
type JobManager struct {
	Addr    string
	resolve cluster.Resolver
	d       *cluster.Dispatcher

	mu      sync.Mutex
	jobs    map[string]*job
	order   []string
	changed chan struct{} // closed and replaced on every state change
	wg      sync.WaitGroup
	stop    context.CancelFunc
	ctx     context.Context
}

type job struct {
	spec    deployment.JobSpec
	state   string
	failure string
	cancel  context.CancelFunc
}

// Start serves a fake JobManager on a free loopback port.
func Start(t testing.TB, resolve cluster.Resolver) *JobManager {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	jm := &JobManager{Addr: ln.Addr().String(), resolve: resolve, jobs: map[string]*job{}, changed: make(chan struct{}), ctx: ctx, stop: stop}
	d, err := cluster.ServeDispatcher(ln, cluster.DispatcherConfig{BuildID: "fakejm", Jobs: service{jm}})
	if err != nil {
		t.Fatal(err)
	}
	jm.d = d
	t.Cleanup(func() {
		jm.stop()
		jm.wg.Wait()
		d.Stop()
	})
	return jm
}

// Spec returns the spec the job was submitted with.
func (jm *JobManager) Spec(name string) (deployment.JobSpec, bool) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	j, ok := jm.jobs[name]
	if !ok {
		return deployment.JobSpec{}, false
	}
	return j.spec, true
}

func (jm *JobManager) set(j *job, state, failure string) {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	j.state, j.failure = state, failure
	close(jm.changed)
	jm.changed = make(chan struct{})
}

type service struct{ jm *JobManager }

func (s service) Submit(ctx context.Context, r *pb.SubmitRequest) (*pb.SubmitResponse, error) {
	p := r.GetSpec()
	spec := deployment.JobSpec{Name: p.GetName(), Kind: p.GetKind(), Args: p.GetArgs(), Config: p.GetConfig()}
	if err := spec.Validate(); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	jm := s.jm
	jm.mu.Lock()
	if _, ok := jm.jobs[spec.Name]; ok {
		jm.mu.Unlock()
		return nil, status.Errorf(codes.AlreadyExists, "job %s exists", spec.Name)
	}
	jctx, cancel := context.WithCancel(jm.ctx)
	j := &job{spec: spec, state: "CREATED", cancel: cancel}
	jm.jobs[spec.Name] = j
	jm.order = append(jm.order, spec.Name)
	jm.mu.Unlock()
	g, jc, err := jm.resolve(ctx, spec)
	if err != nil {
		jm.set(j, "FAILED", err.Error())
		cancel()
		return &pb.SubmitResponse{Job: spec.Name}, nil
	}
	jm.wg.Add(1)
	go func() {
		defer jm.wg.Done()
		defer cancel()
		jm.set(j, "RUNNING", "")
		err := runtime.Execute(jctx, g, jc)
		switch {
		case err == nil:
			jm.set(j, "FINISHED", "")
		case errors.Is(err, context.Canceled):
			jm.set(j, "CANCELED", "")
		default:
			jm.set(j, "FAILED", err.Error())
		}
	}()
	return &pb.SubmitResponse{Job: spec.Name}, nil
}

func terminal(state string) bool {
	return state == "FINISHED" || state == "FAILED" || state == "CANCELED"
}

func (s service) Wait(r *pb.WaitRequest, st grpc.ServerStreamingServer[pb.JobUpdate]) error {
	jm := s.jm
	last := ""
	for {
		jm.mu.Lock()
		j, ok := jm.jobs[r.GetJob()]
		if !ok {
			jm.mu.Unlock()
			return status.Errorf(codes.NotFound, "job %s not found", r.GetJob())
		}
		state, failure, changed := j.state, j.failure, jm.changed
		jm.mu.Unlock()
		if state != last {
			if err := st.Send(&pb.JobUpdate{Job: r.GetJob(), State: state, Failure: failure, Terminal: terminal(state)}); err != nil {
				return err
			}
			last = state
		}
		if terminal(state) {
			return nil
		}
		select {
		case <-changed:
		case <-st.Context().Done():
			return st.Context().Err()
		}
	}
}

func (s service) List(context.Context, *pb.ListRequest) (*pb.ListResponse, error) {
	jm := s.jm
	jm.mu.Lock()
	defer jm.mu.Unlock()
	var out []*pb.JobSummary
	for _, n := range jm.order {
		j := jm.jobs[n]
		out = append(out, &pb.JobSummary{Name: n, Kind: j.spec.Kind, State: j.state, Failure: j.failure})
	}
	return &pb.ListResponse{Jobs: out}, nil
}

func (s service) Cancel(_ context.Context, r *pb.CancelRequest) (*pb.CancelResponse, error) {
	jm := s.jm
	jm.mu.Lock()
	j, ok := jm.jobs[r.GetJob()]
	jm.mu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "job %s not found", r.GetJob())
	}
	j.cancel()
	return &pb.CancelResponse{}, nil
}

func (s service) Checkpoints(_ context.Context, r *pb.CheckpointsRequest) (*pb.CheckpointsResponse, error) {
	if _, ok := s.jm.Spec(r.GetJob()); !ok {
		return nil, status.Errorf(codes.NotFound, "job %s not found", r.GetJob())
	}
	return &pb.CheckpointsResponse{}, nil
}
