package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/deployment"
)

// fakeJobs is a JobService that records submissions and plays scripted
// updates to Wait.
type fakeJobs struct {
	mu        sync.Mutex
	submitted []deployment.JobSpec
	canceled  []string
	waits     int
	// updates are sent to every Wait; after them the stream stays open
	// until hold is closed (nil: return at once), unless the last update is
	// terminal.
	updates []*pb.JobUpdate
	hold    chan struct{}
	// sent, if set, receives each update once it was sent.
	sent chan string
}

func (f *fakeJobs) Submit(_ context.Context, r *pb.SubmitRequest) (*pb.SubmitResponse, error) {
	s := r.GetSpec()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.submitted {
		if p.Name == s.GetName() {
			return nil, status.Errorf(codes.AlreadyExists, "job %s exists", p.Name)
		}
	}
	f.submitted = append(f.submitted, deployment.JobSpec{Name: s.GetName(), Kind: s.GetKind(), Args: s.GetArgs(), Config: s.GetConfig()})
	return &pb.SubmitResponse{Job: s.GetName()}, nil
}

func (f *fakeJobs) known(job string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.submitted {
		if p.Name == job {
			return true
		}
	}
	return false
}

func (f *fakeJobs) Wait(r *pb.WaitRequest, s grpc.ServerStreamingServer[pb.JobUpdate]) error {
	if !f.known(r.GetJob()) {
		return status.Errorf(codes.NotFound, "job %s not found", r.GetJob())
	}
	f.mu.Lock()
	f.waits++
	f.mu.Unlock()
	for _, u := range f.updates {
		if err := s.Send(u); err != nil {
			return err
		}
		if f.sent != nil {
			f.sent <- u.GetState()
		}
		if u.GetTerminal() {
			return nil
		}
	}
	if f.hold != nil {
		select {
		case <-f.hold:
		case <-s.Context().Done():
		}
	}
	return nil
}

func (f *fakeJobs) List(context.Context, *pb.ListRequest) (*pb.ListResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*pb.JobSummary
	for _, s := range f.submitted {
		out = append(out, &pb.JobSummary{Name: s.Name, Kind: s.Kind, State: "RUNNING"})
	}
	return &pb.ListResponse{Jobs: out}, nil
}

func (f *fakeJobs) Cancel(_ context.Context, r *pb.CancelRequest) (*pb.CancelResponse, error) {
	if !f.known(r.GetJob()) {
		return nil, status.Errorf(codes.NotFound, "job %s not found", r.GetJob())
	}
	f.mu.Lock()
	f.canceled = append(f.canceled, r.GetJob())
	f.mu.Unlock()
	return &pb.CancelResponse{}, nil
}

func (f *fakeJobs) Checkpoints(_ context.Context, r *pb.CheckpointsRequest) (*pb.CheckpointsResponse, error) {
	if !f.known(r.GetJob()) {
		return nil, status.Errorf(codes.NotFound, "job %s not found", r.GetJob())
	}
	return &pb.CheckpointsResponse{Completed: 3, History: []*pb.CheckpointStats{{Id: 3, Status: "COMPLETED"}}}, nil
}

// serveFake starts a Dispatcher whose client RPCs go to jobs, on addr
// ("" picks a port), and stops it when the test ends.
func serveFake(t *testing.T, addr string, jobs JobService) *Dispatcher {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ServeDispatcher(ln, DispatcherConfig{BuildID: testBuild, Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	return d
}

func dialTest(t *testing.T, cfg ClientConfig) *Client {
	t.Helper()
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	c, err := Dial(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestClientCalls(t *testing.T) {
	jobs := &fakeJobs{updates: []*pb.JobUpdate{
		{Job: "demo", State: "CREATED"}, {Job: "demo", State: "RUNNING"},
		{Job: "demo", State: "FINISHED", Terminal: true},
		{Job: "demo", State: "NEVER-SENT"},
	}}
	d := serveFake(t, "", jobs)
	c := dialTest(t, ClientConfig{Address: d.Addr().String()})
	ctx := context.Background()

	spec := deployment.JobSpec{Name: "demo", Kind: "demo", Args: []string{"--events=10", "--out=/tmp/x"},
		Config: map[string]string{"parallelism.default": "2"}}
	id, err := c.Submit(ctx, spec)
	if err != nil || id != "demo" {
		t.Fatalf("Submit = %q, %v", id, err)
	}
	if !reflect.DeepEqual(jobs.submitted, []deployment.JobSpec{spec}) {
		t.Fatalf("JobManager got %+v, want %+v", jobs.submitted, spec)
	}
	want := "submit job demo: the JobManager at " + d.Addr().String() + " already has it (job demo exists): choose another --job-name, or cancel that job first (`weir cancel demo --jobmanager " + d.Addr().String() + "`)"
	if _, err := c.Submit(ctx, spec); err == nil || err.Error() != want {
		t.Errorf("second Submit of demo = %v\nwant %s", err, want)
	}
	if _, err := c.Submit(ctx, deployment.JobSpec{Name: "a/b", Kind: "demo"}); err == nil || !strings.Contains(err.Error(), "path separator") {
		t.Errorf("Submit of a bad name = %v, want refused before the call", err)
	}

	var seen []string
	last, err := c.Wait(ctx, "demo", func(u *pb.JobUpdate) { seen = append(seen, u.GetState()) })
	if err != nil {
		t.Fatal(err)
	}
	if last.GetState() != "FINISHED" || !reflect.DeepEqual(seen, []string{"CREATED", "RUNNING", "FINISHED"}) {
		t.Fatalf("Wait = %v after %v, want FINISHED after CREATED RUNNING FINISHED", last, seen)
	}

	list, err := c.List(ctx)
	if err != nil || len(list) != 1 || list[0].GetName() != "demo" || list[0].GetKind() != "demo" {
		t.Fatalf("List = %v, %v", list, err)
	}
	cp, err := c.Checkpoints(ctx, "demo")
	if err != nil || cp.GetCompleted() != 3 || len(cp.GetHistory()) != 1 {
		t.Fatalf("Checkpoints = %v, %v", cp, err)
	}
	if err := c.Cancel(ctx, "demo"); err != nil || !reflect.DeepEqual(jobs.canceled, []string{"demo"}) {
		t.Fatalf("Cancel = %v, canceled %v", err, jobs.canceled)
	}
}

func TestClientUnknownJob(t *testing.T) {
	d := serveFake(t, "", &fakeJobs{})
	c := dialTest(t, ClientConfig{Address: d.Addr().String(), Command: "prog"})
	ctx := context.Background()
	calls := map[string]func() error{
		"cancel":      func() error { return c.Cancel(ctx, "nosuch") },
		"checkpoints": func() error { _, err := c.Checkpoints(ctx, "nosuch"); return err },
		"wait":        func() error { _, err := c.Wait(ctx, "nosuch", nil); return err },
	}
	for name, call := range calls {
		err := call()
		if !errors.Is(err, ErrUnknownJob) {
			t.Errorf("%s of an unknown job = %v, want ErrUnknownJob", name, err)
			continue
		}
		for _, w := range []string{`"nosuch"`, "`prog list --jobmanager " + d.Addr().String() + "`"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not contain %q", name, err, w)
			}
		}
	}
}

func TestClientUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	start := time.Now()
	_, err = Dial(context.Background(), ClientConfig{Address: addr, DialTimeout: 300 * time.Millisecond})
	if !errors.Is(err, ErrJobManagerUnreachable) {
		t.Fatalf("Dial of a closed port = %v, want ErrJobManagerUnreachable", err)
	}
	want := "no JobManager at " + addr + ": start one with `weir jobmanager`, or check --jobmanager"
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want it to start with %q", err, want)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Dial took %s with a 300ms timeout", d)
	}
	if _, err := Dial(context.Background(), ClientConfig{Address: "localhost"}); err == nil || !strings.Contains(err.Error(), "HOST:PORT") {
		t.Errorf("Dial without a port = %v, want an error naming HOST:PORT", err)
	}
}

func TestClientVersionMismatch(t *testing.T) {
	d := serveFake(t, "", &fakeJobs{})
	c := dialTest(t, ClientConfig{Address: d.Addr().String(), protocolVersion: ProtocolVersion + 1})
	_, err := c.List(context.Background())
	if !errors.Is(err, ErrVersionMismatch) {
		t.Fatalf("List by a client of another protocol = %v, want ErrVersionMismatch", err)
	}
	for _, w := range []string{"refused this client", fmt.Sprintf("protocol %d", ProtocolVersion+1), "same weir build"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not contain %q", err, w)
		}
	}
}

// TestClientWaitReconnects stops the JobManager while a client waits and
// starts another on the same address: Wait reconnects and returns the new
// one's terminal update.
func TestClientWaitReconnects(t *testing.T) {
	first := &fakeJobs{updates: []*pb.JobUpdate{{Job: "demo", State: "RUNNING"}}, hold: make(chan struct{}), sent: make(chan string, 10)}
	first.submitted = []deployment.JobSpec{{Name: "demo", Kind: "demo"}}
	d1 := serveFake(t, "", first)
	addr := d1.Addr().String()
	c := dialTest(t, ClientConfig{Address: addr, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, ReconnectTimeout: 20 * time.Second})

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
	<-got     // the client follows the first JobManager
	d1.Stop() // a JobManager restart

	second := &fakeJobs{updates: []*pb.JobUpdate{{Job: "demo", State: "RUNNING"}, {Job: "demo", State: "FINISHED", Terminal: true}}}
	second.submitted = first.submitted
	serveFake(t, addr, second)

	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.u.GetState() != "FINISHED" || !reflect.DeepEqual(r.seen, []string{"RUNNING", "RUNNING", "FINISHED"}) {
			t.Fatalf("Wait = %v after %v, want FINISHED after RUNNING RUNNING FINISHED", r.u, r.seen)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Wait did not return within 20s after the JobManager came back")
	}
	second.mu.Lock()
	defer second.mu.Unlock()
	if second.waits != 1 {
		t.Errorf("the second JobManager served %d Waits, want 1", second.waits)
	}
}

// TestClientWaitGivesUp: a JobManager that does not come back ends Wait
// after ReconnectTimeout with an error naming the address and the fix.
func TestClientWaitGivesUp(t *testing.T) {
	jobs := &fakeJobs{updates: []*pb.JobUpdate{{Job: "demo", State: "RUNNING"}}, hold: make(chan struct{}), sent: make(chan string, 10)}
	jobs.submitted = []deployment.JobSpec{{Name: "demo", Kind: "demo"}}
	d := serveFake(t, "", jobs)
	c := dialTest(t, ClientConfig{Address: d.Addr().String(), MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, ReconnectTimeout: 300 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		_, err := c.Wait(context.Background(), "demo", nil)
		done <- err
	}()
	<-jobs.sent
	d.Stop()
	select {
	case err := <-done:
		if !errors.Is(err, ErrJobManagerUnreachable) {
			t.Fatalf("Wait = %v, want ErrJobManagerUnreachable", err)
		}
		for _, w := range []string{d.Addr().String(), "waiting for job demo", "300ms", "`weir jobmanager`"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q does not contain %q", err, w)
			}
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Wait did not give up within 20s (ReconnectTimeout 300ms)")
	}
}
