package cluster

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/weirstream/weir/internal/cluster/pb"
)

// serveJM serves a hand-written JobManager on a loopback port until the
// test ends and returns its address.
func serveJM(t *testing.T, jm pb.JobManagerServer) string {
	t.Helper()
	srv := grpc.NewServer()
	pb.RegisterJobManagerServer(srv, jm)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { srv.Serve(ln); close(served) }()
	t.Cleanup(func() { srv.Stop(); <-served })
	return ln.Addr().String()
}

// standbyJM refuses every Register with NOT_LEADER naming leader.
type standbyJM struct {
	pb.UnimplementedJobManagerServer
	leader   string
	connects chan struct{}
}

func (f *standbyJM) Connect(s grpc.BidiStreamingServer[pb.TaskManagerMessage, pb.JobManagerMessage]) error {
	if _, err := s.Recv(); err != nil {
		return err
	}
	f.connects <- struct{}{}
	return s.Send(&pb.JobManagerMessage{Msg: &pb.JobManagerMessage_Rejected{Rejected: &pb.Rejected{
		Cause: pb.RejectCause_REJECT_CAUSE_NOT_LEADER, Reason: "JobManager jm-2 is a standby", LeaderRpcAddress: f.leader}}})
}

// termJM accepts every Register as the leader of term, then sends what
// the test puts on send, until the test sends on end or the TaskManager
// goes away.
type termJM struct {
	pb.UnimplementedJobManagerServer
	term     uint64
	connects chan struct{}
	send     chan *pb.JobManagerMessage
	end      chan struct{} // each value ends one session's stream
}

func newTermJM(term uint64) *termJM {
	return &termJM{term: term, connects: make(chan struct{}, 10), send: make(chan *pb.JobManagerMessage, 10), end: make(chan struct{}, 1)}
}

func (f *termJM) Connect(s grpc.BidiStreamingServer[pb.TaskManagerMessage, pb.JobManagerMessage]) error {
	if _, err := s.Recv(); err != nil {
		return err
	}
	f.connects <- struct{}{}
	if err := s.Send(&pb.JobManagerMessage{FencingToken: f.term, Msg: &pb.JobManagerMessage_Registered{Registered: &pb.Registered{
		SessionId: "s", HeartbeatIntervalMillis: 1000, HeartbeatTimeoutMillis: 20000, FencingToken: f.term}}}); err != nil {
		return err
	}
	for {
		select {
		case m := <-f.send:
			if err := s.Send(m); err != nil {
				return err
			}
		case <-f.end:
			return nil
		case <-s.Context().Done():
			return nil
		}
	}
}

func trigger(term uint64, id int64) *pb.JobManagerMessage {
	return &pb.JobManagerMessage{FencingToken: term, Msg: &pb.JobManagerMessage_Trigger{Trigger: &pb.Trigger{CheckpointId: id}}}
}

// movableLeader is a Locate whose answer the test changes.
type movableLeader struct {
	mu    sync.Mutex
	addrs []string
}

func (m *movableLeader) set(addrs ...string) {
	m.mu.Lock()
	m.addrs = addrs
	m.mu.Unlock()
}

func (m *movableLeader) locate(context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.addrs) == 0 {
		return nil, errors.New("no leader")
	}
	return m.addrs, nil
}

func recvDisconnected(t *testing.T, h *tmHandler) error {
	t.Helper()
	select {
	case err := <-h.disconnected:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("session did not end within 20s")
	}
	return nil
}

// A list whose first JobManager is a standby: its NOT_LEADER rejection
// names the leader, a real Dispatcher the list does not hold, and the
// TaskManager registers there.
func TestTaskManagerFollowsNotLeader(t *testing.T) {
	r := newRecorder()
	d := startDispatcher(t, "127.0.0.1:0", r, DispatcherConfig{})
	standby := &standbyJM{leader: d.Addr().String(), connects: make(chan struct{}, 10)}
	saddr := serveJM(t, standby)
	h := newTMHandler()
	runTM(t, TaskManagerConfig{JobManager: saddr + ", " + saddr, ResourceID: "tm-a", Slots: 1, Handler: h})
	if e := r.next(t, "registered"); e.tm.ID != "tm-a" {
		t.Fatalf("registered %s", e.tm)
	}
	s := recvRegistered(t, h)
	if s.JobManager != d.Addr().String() || s.FencingToken != 0 {
		t.Fatalf("session with %s term %d, want %s term 0", s.JobManager, s.FencingToken, d.Addr())
	}
	if len(standby.connects) != 1 {
		t.Fatalf("standby asked %d times, want once", len(standby.connects))
	}
}

// Two standbys that know no leader, and a closed port: the TaskManager
// keeps looking until the registration timeout, and the error names every
// address tried.
func TestTaskManagerNoLeader(t *testing.T) {
	a := serveJM(t, &standbyJM{connects: make(chan struct{}, 100)})
	b := serveJM(t, &standbyJM{connects: make(chan struct{}, 100)})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := ln.Addr().String()
	ln.Close()
	_, res := runTM(t, TaskManagerConfig{JobManager: strings.Join([]string{a, b, c}, ","), ResourceID: "tm-a", Slots: 1, RegistrationTimeout: 300 * time.Millisecond})
	err = <-res
	if !errors.Is(err, ErrJobManagerUnreachable) || errors.Is(err, ErrRejected) {
		t.Fatalf("got %v, want ErrJobManagerUnreachable", err)
	}
	want := "no JobManager at " + a + ", " + b + " or " + c + " took the registration for 300ms; last: "
	if !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), ": start a JobManager, or check --jobmanager") {
		t.Fatalf("got  %v\nwant %s…: start a JobManager, or check --jobmanager", err, want)
	}
}

// A permanent rejection from the second JobManager of a list ends the
// TaskManager as it always did.
func TestTaskManagerListRejection(t *testing.T) {
	r := newRecorder()
	d := startDispatcher(t, "127.0.0.1:0", r, DispatcherConfig{})
	standby := serveJM(t, &standbyJM{connects: make(chan struct{}, 10)})
	_, res := runTM(t, TaskManagerConfig{JobManager: standby + "," + d.Addr().String(), ResourceID: "tm-a", Slots: 0})
	if err := <-res; !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "offers 0 slots") {
		t.Fatalf("got %v, want the Dispatcher's rejection", err)
	}
}

// The TaskManager saw term 7; a JobManager still leading term 5 (deposed,
// and not aware yet) is refused and the TaskManager goes on to the leader.
func TestTaskManagerRefusesStaleRegistered(t *testing.T) {
	old, cur := newTermJM(5), newTermJM(7)
	oldAddr, curAddr := serveJM(t, old), serveJM(t, cur)
	leader := &movableLeader{}
	leader.set(curAddr)
	h := newTMHandler()
	runTM(t, TaskManagerConfig{ResourceID: "tm-a", Slots: 1, Handler: h, Locate: leader.locate})
	if s := recvRegistered(t, h); s.JobManager != curAddr || s.FencingToken != 7 {
		t.Fatalf("first session with %s term %d", s.JobManager, s.FencingToken)
	}
	leader.set(oldAddr, curAddr) // etcd lags: the old leader comes first
	cur.end <- struct{}{}
	if err := recvDisconnected(t, h); !errors.Is(err, ErrStreamClosed) {
		t.Fatalf("disconnected: %v", err)
	}
	s := recvRegistered(t, h)
	if s.JobManager != curAddr || s.FencingToken != 7 {
		t.Fatalf("second session with %s term %d, want %s term 7", s.JobManager, s.FencingToken, curAddr)
	}
	if len(old.connects) == 0 {
		t.Fatal("the deposed JobManager was not asked")
	}
}

// A message of an older term than the session's is dropped and ends the
// session; the messages before it were delivered.
func TestTaskManagerDropsStaleMessage(t *testing.T) {
	jm := newTermJM(7)
	addr := serveJM(t, jm)
	h := newTMHandler()
	runTM(t, TaskManagerConfig{JobManager: addr, ResourceID: "tm-a", Slots: 1, Handler: h})
	recvRegistered(t, h)
	jm.send <- trigger(7, 1)
	<-h.trigc
	jm.send <- trigger(6, 2)
	jm.send <- trigger(7, 3) // the session has ended: never delivered
	err := recvDisconnected(t, h)
	want := "message from a deposed leader: the JobManager at " + addr + " sent a message of term 6; its session is of term 7 and the newest term seen is 7"
	if !errors.Is(err, ErrStaleLeader) || err.Error() != want {
		t.Fatalf("disconnected: %v\nwant %s", err, want)
	}
	recvRegistered(t, h) // and it registers again
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.triggers) != 1 || h.triggers[0] != 1 {
		t.Fatalf("triggers %v, want [1]", h.triggers)
	}
}

// A newer term in etcd ends the session with the old leader at once (it
// is paused: its heartbeat timeout would take long), and the TaskManager
// registers with the new one.
func TestTaskManagerNewLeaderTerm(t *testing.T) {
	a, b := newTermJM(3), newTermJM(4)
	aAddr, bAddr := serveJM(t, a), serveJM(t, b)
	leader := &movableLeader{}
	leader.set(aAddr)
	terms := make(chan int64, 1)
	h := newTMHandler()
	runTM(t, TaskManagerConfig{ResourceID: "tm-a", Slots: 1, Handler: h, Locate: leader.locate,
		LeaderTerms: func(ctx context.Context) <-chan int64 { return terms }})
	if s := recvRegistered(t, h); s.JobManager != aAddr || s.FencingToken != 3 {
		t.Fatalf("first session with %s term %d", s.JobManager, s.FencingToken)
	}
	leader.set(bAddr, aAddr)
	terms <- 4
	err := recvDisconnected(t, h)
	want := "a new leader was elected: term 4 is newer than term 3 of the JobManager at " + aAddr
	if !errors.Is(err, ErrNewLeader) || err.Error() != want {
		t.Fatalf("disconnected: %v\nwant %s", err, want)
	}
	if s := recvRegistered(t, h); s.JobManager != bAddr || s.FencingToken != 4 {
		t.Fatalf("second session with %s term %d, want %s term 4", s.JobManager, s.FencingToken, bAddr)
	}
	// The deposed leader's word is dropped from now on, should it still
	// reach this TaskManager on another session: term 3 < 4.
	if err := fenced(&JobManagerSession{JobManager: aAddr, FencingToken: 3}, trigger(3, 1), func() *fence { f := newFence(); f.raise(4); return f }()); !errors.Is(err, ErrStaleLeader) {
		t.Fatalf("fenced = %v", err)
	}
}

// Locate failing (etcd unreachable) and no list: the error says what
// Locate said and where to look.
func TestTaskManagerLocateFails(t *testing.T) {
	_, res := runTM(t, TaskManagerConfig{ResourceID: "tm-a", Slots: 1, RegistrationTimeout: 200 * time.Millisecond,
		Locate: func(context.Context) ([]string, error) {
			return nil, errors.New("etcd at 127.0.0.1:1: connection refused")
		}})
	err := <-res
	want := "no JobManager found for 200ms (finding the leader: etcd at 127.0.0.1:1: connection refused): start a JobManager, or check --jobmanager and high-availability.etcd.endpoints"
	if !errors.Is(err, ErrJobManagerUnreachable) || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
}
