package cluster

import (
	"context"
	"errors"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/deployment"
)

// standbyJobs answers every client RPC as a standby JobManager does:
// NotLeader naming the leader at *leader ("" : none known).
type standbyJobs struct {
	mu     sync.Mutex
	leader string
	calls  int
}

func (s *standbyJobs) setLeader(a string) {
	s.mu.Lock()
	s.leader = a
	s.mu.Unlock()
}

func (s *standbyJobs) refuse(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return NotLeader(ctx, "jm-2", "127.0.0.1:6124", "jm-1", s.leader, 7)
}

func (s *standbyJobs) Submit(ctx context.Context, _ *pb.SubmitRequest) (*pb.SubmitResponse, error) {
	return nil, s.refuse(ctx)
}
func (s *standbyJobs) Wait(_ *pb.WaitRequest, st grpc.ServerStreamingServer[pb.JobUpdate]) error {
	return s.refuse(st.Context())
}
func (s *standbyJobs) List(ctx context.Context, _ *pb.ListRequest) (*pb.ListResponse, error) {
	return nil, s.refuse(ctx)
}
func (s *standbyJobs) Cancel(ctx context.Context, _ *pb.CancelRequest) (*pb.CancelResponse, error) {
	return nil, s.refuse(ctx)
}
func (s *standbyJobs) Checkpoints(ctx context.Context, _ *pb.CheckpointsRequest) (*pb.CheckpointsResponse, error) {
	return nil, s.refuse(ctx)
}

// switchJobs is a JobService the test replaces: a standby that becomes
// the leader.
type switchJobs struct {
	mu  sync.Mutex
	cur JobService
}

func (s *switchJobs) set(j JobService) { s.mu.Lock(); s.cur = j; s.mu.Unlock() }
func (s *switchJobs) get() JobService  { s.mu.Lock(); defer s.mu.Unlock(); return s.cur }
func (s *switchJobs) Submit(ctx context.Context, r *pb.SubmitRequest) (*pb.SubmitResponse, error) {
	return s.get().Submit(ctx, r)
}
func (s *switchJobs) Wait(r *pb.WaitRequest, st grpc.ServerStreamingServer[pb.JobUpdate]) error {
	return s.get().Wait(r, st)
}
func (s *switchJobs) List(ctx context.Context, r *pb.ListRequest) (*pb.ListResponse, error) {
	return s.get().List(ctx, r)
}
func (s *switchJobs) Cancel(ctx context.Context, r *pb.CancelRequest) (*pb.CancelResponse, error) {
	return s.get().Cancel(ctx, r)
}
func (s *switchJobs) Checkpoints(ctx context.Context, r *pb.CheckpointsRequest) (*pb.CheckpointsResponse, error) {
	return s.get().Checkpoints(ctx, r)
}

// restJobs is fakeJobs whose List announces a REST address.
type restJobs struct {
	*fakeJobs
	rest string
}

func (j restJobs) List(ctx context.Context, r *pb.ListRequest) (*pb.ListResponse, error) {
	_ = grpc.SetHeader(ctx, metadata.Pairs(restAddressHeader, j.rest))
	return j.fakeJobs.List(ctx, r)
}

// The client is given a standby first: every call lands on the leader it
// names, and so does the REST address savepoints use.
func TestClientFollowsStandbyToLeader(t *testing.T) {
	jobs := &fakeJobs{}
	leader := serveFake(t, "", restJobs{jobs, "0.0.0.0:8081"})
	lAddr := leader.Addr().String()
	standby := &standbyJobs{leader: lAddr}
	sAddr := serveFake(t, "", standby).Addr().String()
	ctx := context.Background()

	c := dialTest(t, ClientConfig{Address: sAddr + "," + lAddr})
	if c.Address() != sAddr {
		t.Fatalf("dialled %s, want the first reachable %s", c.Address(), sAddr)
	}
	if _, err := c.Submit(ctx, deployment.JobSpec{Name: "demo", Kind: "demo"}); err != nil {
		t.Fatal(err)
	}
	if c.Address() != lAddr || !jobs.known("demo") {
		t.Fatalf("client at %s after Submit, leader %s knows demo: %v", c.Address(), lAddr, jobs.known("demo"))
	}
	if list, err := c.List(ctx); err != nil || len(list) != 1 {
		t.Fatalf("List = %v, %v", list, err)
	}

	// A client given only the standby, and one given the leader by Locate.
	c2 := dialTest(t, ClientConfig{Address: sAddr})
	rest, err := c2.RESTAddress(ctx)
	if err != nil || rest != "127.0.0.1:8081" {
		t.Fatalf("RESTAddress through the standby = %q, %v; want the leader's 127.0.0.1:8081", rest, err)
	}
	c3 := dialTest(t, ClientConfig{Locate: func(context.Context) ([]string, error) { return []string{lAddr}, nil }})
	if err := c3.Cancel(ctx, "demo"); err != nil || c3.Address() != lAddr {
		t.Fatalf("Cancel through Locate: %v at %s", err, c3.Address())
	}
	standby.mu.Lock()
	defer standby.mu.Unlock()
	if standby.calls != 2 {
		t.Fatalf("the standby answered %d calls, want 2 (Submit, then the REST address)", standby.calls)
	}
}

// Standbys that know no leader: the error says so, names the addresses
// and the fix, and wraps ErrNotLeader and ErrJobManagerUnreachable.
func TestClientNoLeader(t *testing.T) {
	sAddr := serveFake(t, "", &standbyJobs{}).Addr().String()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	c := dialTest(t, ClientConfig{Address: sAddr + "," + dead, DialTimeout: 300 * time.Millisecond})
	_, err = c.List(context.Background())
	if !errors.Is(err, ErrNotLeader) || !errors.Is(err, ErrJobManagerUnreachable) {
		t.Fatalf("List = %v, want ErrNotLeader and ErrJobManagerUnreachable", err)
	}
	for _, w := range []string{"list jobs: ", "is a standby and knows no leader", sAddr, "start one with `weir jobmanager`, or check --jobmanager"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not contain %q", err, w)
		}
	}

	// Nothing reachable at all: Dial names every address.
	_, err = Dial(context.Background(), ClientConfig{Address: dead + ",127.0.0.1:1", DialTimeout: 300 * time.Millisecond,
		Locate: func(context.Context) ([]string, error) { return nil, errors.New("no leader in etcd") }})
	want := "no JobManager at " + dead + " or 127.0.0.1:1 (finding the leader: no leader in etcd): start one with `weir jobmanager`, or check --jobmanager and high-availability.etcd.endpoints"
	if !errors.Is(err, ErrJobManagerUnreachable) || err.Error() != want {
		t.Fatalf("Dial = %v\nwant %s", err, want)
	}
}

// A failover while `weir run` follows a job: the leader goes away, a
// standby (the client's first address) takes over under another address
// the client was never given, and Wait follows the job, by its name, to
// its end there.
func TestClientWaitFollowsFailover(t *testing.T) {
	first := &fakeJobs{updates: []*pb.JobUpdate{{Job: "demo", State: "RUNNING"}}, hold: make(chan struct{})}
	first.submitted = []deployment.JobSpec{{Name: "demo", Kind: "demo"}}
	d1 := serveFake(t, "", first)
	standby := &standbyJobs{leader: d1.Addr().String()}
	sAddr := serveFake(t, "", standby).Addr().String()
	next := &switchJobs{cur: &standbyJobs{leader: d1.Addr().String()}}
	d2 := serveFake(t, "", next)

	c := dialTest(t, ClientConfig{Address: sAddr, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, ReconnectTimeout: 20 * time.Second})
	type result struct {
		u    *pb.JobUpdate
		seen []string
		err  error
	}
	done := make(chan result, 1)
	got := make(chan struct{}, 10)
	go func() {
		var seen []string
		u, err := c.Wait(context.Background(), "demo", func(u *pb.JobUpdate) {
			seen = append(seen, u.GetState())
			got <- struct{}{}
		})
		done <- result{u, seen, err}
	}()
	<-got // following the first leader, through the standby's redirect
	if c.Address() != d1.Addr().String() {
		t.Fatalf("following at %s, want the leader %s", c.Address(), d1.Addr())
	}

	// Failover: d2 leads, with the job recovered under its name.
	second := &fakeJobs{updates: []*pb.JobUpdate{{Job: "demo", State: "RUNNING"}, {Job: "demo", State: "FINISHED", Terminal: true}}}
	second.submitted = first.submitted
	next.set(second)
	standby.setLeader(d2.Addr().String())
	d1.Stop()

	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.u.GetState() != "FINISHED" || !reflect.DeepEqual(r.seen, []string{"RUNNING", "RUNNING", "FINISHED"}) {
			t.Fatalf("Wait = %v after %v, want FINISHED after RUNNING RUNNING FINISHED", r.u, r.seen)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Wait did not follow the job to the new leader within 20s")
	}
	if c.Address() != d2.Addr().String() {
		t.Errorf("client at %s, want the new leader %s", c.Address(), d2.Addr())
	}
}
