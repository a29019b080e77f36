package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/weirstream/weir/internal/cluster/pb"
)

const testBuild = "b1d0000000000000000000000000000000000000000000000000000000000001"

// event is one callback of a Dispatcher, recorded in order.
type event struct {
	kind   string // registered, lost
	tm     *TaskManager
	reason error
	slots  []JobSlots
}

// recorder collects a Dispatcher's callbacks on channels, so tests wait
// for them instead of sleeping.
type recorder struct {
	events chan event
	mu     sync.Mutex
	msgs   []*pb.TaskManagerMessage
	msgc   chan struct{}
}

func newRecorder() *recorder {
	return &recorder{events: make(chan event, 100), msgc: make(chan struct{}, 1)}
}

func (r *recorder) config(cfg DispatcherConfig) DispatcherConfig {
	cfg.OnTaskManagerRegistered = func(tm *TaskManager) { r.events <- event{kind: "registered", tm: tm} }
	cfg.OnTaskManagerLost = func(tm *TaskManager, reason error, slots []JobSlots) {
		r.events <- event{kind: "lost", tm: tm, reason: reason, slots: slots}
	}
	cfg.OnTaskManagerMessage = func(tm *TaskManager, m *pb.TaskManagerMessage) {
		r.mu.Lock()
		r.msgs = append(r.msgs, m)
		r.mu.Unlock()
		select {
		case r.msgc <- struct{}{}:
		default:
		}
	}
	return cfg
}

func (r *recorder) next(t *testing.T, kind string) event {
	t.Helper()
	select {
	case e := <-r.events:
		if e.kind != kind {
			t.Fatalf("got %s of %s (%v), want %s", e.kind, e.tm, e.reason, kind)
		}
		return e
	case <-time.After(20 * time.Second):
		t.Fatalf("no %s event within 20s", kind)
	}
	panic("unreachable")
}

func startDispatcher(t *testing.T, addr string, r *recorder, cfg DispatcherConfig) *Dispatcher {
	t.Helper()
	if cfg.BuildID == "" {
		cfg.BuildID = testBuild
	}
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval, cfg.HeartbeatTimeout = 20*time.Millisecond, 5*time.Second
	}
	d, err := StartDispatcher(addr, r.config(cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	return d
}

// tmHandler records what a TaskManager client receives.
type tmHandler struct {
	NopTaskManagerHandler
	registered   chan *JobManagerSession
	disconnected chan error
	heartbeats   chan struct{}
	mu           sync.Mutex
	triggers     []int64
	trigc        chan struct{}
	onRegistered func(*JobManagerSession)
}

func newTMHandler() *tmHandler {
	return &tmHandler{
		registered:   make(chan *JobManagerSession, 10),
		disconnected: make(chan error, 10),
		heartbeats:   make(chan struct{}, 1000),
		trigc:        make(chan struct{}, 1),
	}
}

func (h *tmHandler) Registered(s *JobManagerSession) {
	if h.onRegistered != nil {
		h.onRegistered(s)
	}
	h.registered <- s
}
func (h *tmHandler) Disconnected(_ *JobManagerSession, err error) { h.disconnected <- err }
func (h *tmHandler) Reports() []*pb.TaskReport {
	select {
	case h.heartbeats <- struct{}{}:
	default:
	}
	return []*pb.TaskReport{{Job: "demo", Exec: &pb.ExecutionID{Vertex: 1}, RecordsIn: 7}}
}
func (h *tmHandler) Trigger(_ *JobManagerSession, m *pb.Trigger) {
	h.mu.Lock()
	h.triggers = append(h.triggers, m.GetCheckpointId())
	h.mu.Unlock()
	select {
	case h.trigc <- struct{}{}:
	default:
	}
}

// runTM runs a TaskManager client until the test ends or stop is called;
// its result arrives on the returned channel.
func runTM(t *testing.T, cfg TaskManagerConfig) (stop func(), result <-chan error) {
	t.Helper()
	if cfg.BuildID == "" {
		cfg.BuildID = testBuild
	}
	if cfg.MaxBackoff == 0 {
		cfg.MinBackoff, cfg.MaxBackoff = 10*time.Millisecond, 50*time.Millisecond
	}
	if cfg.RegistrationTimeout == 0 {
		cfg.RegistrationTimeout = 20 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- RunTaskManager(ctx, cfg) }()
	var once sync.Once
	res := make(chan error, 1)
	stop = func() {
		once.Do(func() {
			cancel()
			res <- <-done
		})
	}
	t.Cleanup(stop)
	// A client that ends by itself (rejected, unreachable) reports on res
	// without stop.
	go func() {
		select {
		case err := <-done:
			once.Do(func() { cancel(); res <- err })
		case <-ctx.Done():
		}
	}()
	return stop, res
}

func recvRegistered(t *testing.T, h *tmHandler) *JobManagerSession {
	t.Helper()
	select {
	case s := <-h.registered:
		return s
	case <-time.After(20 * time.Second):
		t.Fatal("TaskManager not registered within 20s")
	}
	return nil
}

func TestRegisterAndLoseByStreamClose(t *testing.T) {
	r := newRecorder()
	d := startDispatcher(t, "127.0.0.1:0", r, DispatcherConfig{})
	addr := d.Addr().String()
	var stops []func()
	handlers := []*tmHandler{newTMHandler(), newTMHandler(), newTMHandler()}
	for i, h := range handlers {
		stop, _ := runTM(t, TaskManagerConfig{JobManager: addr, ResourceID: fmt.Sprintf("tm-%d", i), Slots: i + 1, DataAddress: fmt.Sprintf("127.0.0.1:%d", 7000+i), Handler: h})
		stops = append(stops, stop)
		e := r.next(t, "registered") // one at a time: registration order is known
		if e.tm.ID != fmt.Sprintf("tm-%d", i) || e.tm.Slots != i+1 || e.tm.DataAddress != fmt.Sprintf("127.0.0.1:%d", 7000+i) {
			t.Fatalf("registered %+v", e.tm)
		}
		s := recvRegistered(t, h)
		if s.ID != e.tm.Session || s.HeartbeatTimeout != 5*time.Second || s.HeartbeatInterval != 20*time.Millisecond {
			t.Fatalf("TaskManager session %+v, JobManager session %s", s, e.tm.Session)
		}
	}
	want := []TaskManagerSlots{{"tm-0", 1, 1}, {"tm-1", 2, 2}, {"tm-2", 3, 3}}
	if got := d.TaskManagers(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("slots %v, want %v", got, want)
	}
	var placed map[int]SlotRef
	d.WithSlotPool(func(p *SlotPool) { placed, _ = p.Allocate("demo", []int{0, 1, 2}) })
	if placed[1].TM != "tm-1" {
		t.Fatalf("placement %v", placed)
	}
	// Heartbeats flow: the JobManager's requests are answered with reports.
	for range 3 {
		<-handlers[1].heartbeats
	}
	for d.TaskManager("tm-1").Reports() == nil {
		<-handlers[1].heartbeats
	}
	if rep := d.TaskManager("tm-1").Reports(); len(rep) != 1 || rep[0].GetRecordsIn() != 7 {
		t.Fatalf("reports %v", rep)
	}

	stops[1]() // the TaskManager process goes away: its stream closes
	e := r.next(t, "lost")
	if e.tm.ID != "tm-1" || !errors.Is(e.reason, ErrStreamClosed) {
		t.Fatalf("lost %s: %v", e.tm, e.reason)
	}
	if !strings.HasPrefix(e.reason.Error(), "TaskManager tm-1 (127.0.0.1:") {
		t.Fatalf("reason %q does not name the TaskManager", e.reason)
	}
	if fmt.Sprint(e.slots) != "[{demo [1]}]" {
		t.Fatalf("lost slots %v, want demo's logical slot 1", e.slots)
	}
	want = []TaskManagerSlots{{"tm-0", 1, 0}, {"tm-2", 3, 2}}
	if got := d.TaskManagers(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("slots after loss %v, want %v", got, want)
	}
	if err := e.tm.Send(&pb.JobManagerMessage{}); !errors.Is(err, ErrSessionClosed) {
		t.Fatalf("send to a lost session: %v", err)
	}
}

// rawRegister opens a session by hand and returns the stream and the
// answer to Register; the caller decides what to do next.
func rawRegister(t *testing.T, addr string, reg *pb.Register) (grpc.BidiStreamingClient[pb.TaskManagerMessage, pb.JobManagerMessage], *pb.JobManagerMessage) {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	stream, err := pb.NewJobManagerClient(conn).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&pb.TaskManagerMessage{Msg: &pb.TaskManagerMessage_Register{Register: reg}}); err != nil {
		t.Fatal(err)
	}
	m, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return stream, m
}

func TestLoseByHeartbeatTimeout(t *testing.T) {
	r := newRecorder()
	d := startDispatcher(t, "127.0.0.1:0", r, DispatcherConfig{HeartbeatInterval: 20 * time.Millisecond, HeartbeatTimeout: 300 * time.Millisecond})
	h := newTMHandler()
	runTM(t, TaskManagerConfig{JobManager: d.Addr().String(), ResourceID: "tm-live", Slots: 1, Handler: h})
	r.next(t, "registered")

	// A TaskManager that registers and then never answers.
	_, m := rawRegister(t, d.Addr().String(), &pb.Register{ProtocolVersion: ProtocolVersion, BuildId: testBuild, ResourceId: "tm-mute", Slots: 2})
	if m.GetRegistered() == nil {
		t.Fatalf("answer %v", m)
	}
	r.next(t, "registered")
	e := r.next(t, "lost")
	if e.tm.ID != "tm-mute" || !errors.Is(e.reason, ErrHeartbeatTimeout) || !strings.HasSuffix(e.reason.Error(), "lost: heartbeat timeout: no heartbeat for 300ms") {
		t.Fatalf("lost %s: %v", e.tm, e.reason)
	}
	if got := d.TaskManagers(); fmt.Sprint(got) != "[{tm-live 1 1}]" {
		t.Fatalf("slots %v", got)
	}
	// The live TaskManager answered through the same time.
	if d.TaskManager("tm-live") == nil {
		t.Fatal("tm-live lost too")
	}
}

func TestReregisterAfterJobManagerRestart(t *testing.T) {
	r1 := newRecorder()
	d1 := startDispatcher(t, "127.0.0.1:0", r1, DispatcherConfig{})
	addr := d1.Addr().String()
	h := newTMHandler()
	runTM(t, TaskManagerConfig{JobManager: addr, ResourceID: "tm-a", Slots: 2, Handler: h})
	r1.next(t, "registered")
	s1 := recvRegistered(t, h)

	d1.Stop()
	if e := r1.next(t, "lost"); !errors.Is(e.reason, ErrDispatcherStopped) {
		t.Fatalf("lost at stop: %v", e.reason)
	}
	select {
	case err := <-h.disconnected:
		if !errors.Is(err, ErrStreamClosed) {
			t.Fatalf("disconnected: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("TaskManager did not notice its JobManager stopped")
	}

	r2 := newRecorder()
	d2 := startDispatcher(t, addr, r2, DispatcherConfig{})
	e := r2.next(t, "registered")
	s2 := recvRegistered(t, h)
	if e.tm.ID != "tm-a" || s2.ID == s1.ID || s2.ID != e.tm.Session {
		t.Fatalf("second session %s (first %s), JobManager says %s", s2.ID, s1.ID, e.tm.Session)
	}
	if got := d2.TaskManagers(); fmt.Sprint(got) != "[{tm-a 2 2}]" {
		t.Fatalf("slots %v", got)
	}
}

func TestTaskManagerDetectsSilentJobManager(t *testing.T) {
	// A JobManager that accepts the registration and then says nothing.
	fake := &silentJobManager{connects: make(chan struct{}, 10)}
	srv := grpc.NewServer()
	pb.RegisterJobManagerServer(srv, fake)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { srv.Serve(ln); close(served) }()
	defer func() { srv.Stop(); <-served }()

	h := newTMHandler()
	stop, _ := runTM(t, TaskManagerConfig{JobManager: ln.Addr().String(), ResourceID: "tm-a", Slots: 1, Handler: h})
	recvRegistered(t, h)
	select {
	case err := <-h.disconnected:
		if !errors.Is(err, ErrHeartbeatTimeout) || err.Error() != "heartbeat timeout: no heartbeat request from the JobManager for 300ms" {
			t.Fatalf("disconnected: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("silent JobManager not noticed")
	}
	recvRegistered(t, h) // and it registers again
	stop()
}

type silentJobManager struct {
	pb.UnimplementedJobManagerServer
	connects chan struct{}
}

func (f *silentJobManager) Connect(s grpc.BidiStreamingServer[pb.TaskManagerMessage, pb.JobManagerMessage]) error {
	if _, err := s.Recv(); err != nil {
		return err
	}
	f.connects <- struct{}{}
	if err := s.Send(&pb.JobManagerMessage{Msg: &pb.JobManagerMessage_Registered{Registered: &pb.Registered{
		SessionId: "s", HeartbeatIntervalMillis: 100, HeartbeatTimeoutMillis: 300}}}); err != nil {
		return err
	}
	<-s.Context().Done()
	return nil
}

func TestRejections(t *testing.T) {
	r := newRecorder()
	d := startDispatcher(t, "127.0.0.1:0", r, DispatcherConfig{})
	addr := d.Addr().String()
	for _, tc := range []struct {
		name string
		cfg  TaskManagerConfig
		want string
	}{
		{"version", TaskManagerConfig{Slots: 1, protocolVersion: ProtocolVersion - 1},
			fmt.Sprintf("TaskManager speaks cluster protocol %d, this JobManager %d: run the same weir build in every role", ProtocolVersion-1, ProtocolVersion)},
		{"build", TaskManagerConfig{Slots: 1, BuildID: "77aa00000000ffff"},
			"TaskManager runs build 77aa00000000, this JobManager build b1d000000000: run the same weir build in every role"},
		{"slots", TaskManagerConfig{Slots: 0},
			"TaskManager offers 0 slots: start it with --slots 1 or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.JobManager, cfg.ResourceID = addr, "tm-"+tc.name
			_, res := runTM(t, cfg)
			var err error
			select {
			case err = <-res:
			case <-time.After(20 * time.Second):
				t.Fatal("no rejection within 20s")
			}
			want := "registration rejected by JobManager at " + addr + ": " + tc.want
			if !errors.Is(err, ErrRejected) || err.Error() != want {
				t.Fatalf("got  %v\nwant %s", err, want)
			}
		})
	}
	if got := d.TaskManagers(); len(got) != 0 {
		t.Fatalf("rejected TaskManagers in the pool: %v", got)
	}
	select {
	case e := <-r.events:
		t.Fatalf("callback for a rejected TaskManager: %s %s", e.kind, e.tm)
	default:
	}
}

func TestClientVersionInterceptor(t *testing.T) {
	d := startDispatcher(t, "127.0.0.1:0", newRecorder(), DispatcherConfig{})
	for _, tc := range []struct {
		version int
		code    codes.Code
		msg     string
	}{
		{ProtocolVersion - 1, codes.FailedPrecondition, fmt.Sprintf("client speaks cluster protocol %d, this JobManager %d: run the same weir build in every role", ProtocolVersion-1, ProtocolVersion)},
		{ProtocolVersion, codes.Unimplemented, "method List not implemented"},
	} {
		opts := append(versionClientOptions(tc.version), grpc.WithTransportCredentials(insecure.NewCredentials()))
		conn, err := grpc.NewClient("passthrough:///"+d.Addr().String(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		c := pb.NewJobManagerClient(conn)
		_, err = c.List(context.Background(), &pb.ListRequest{})
		if st := status.Convert(err); st.Code() != tc.code || st.Message() != tc.msg {
			t.Errorf("List with protocol %d: %v, want %s %q", tc.version, err, tc.code, tc.msg)
		}
		ws, err := c.Wait(context.Background(), &pb.WaitRequest{Job: "demo"})
		if err == nil {
			_, err = ws.Recv()
		}
		if st := status.Convert(err); st.Code() != tc.code {
			t.Errorf("Wait with protocol %d: %v, want %s", tc.version, err, tc.code)
		}
		conn.Close()
	}
}

func TestMessagesInOrder(t *testing.T) {
	const n = 2000
	r := newRecorder()
	d := startDispatcher(t, "127.0.0.1:0", r, DispatcherConfig{})
	h := newTMHandler()
	h.onRegistered = func(s *JobManagerSession) {
		for i := range n {
			if err := s.Send(&pb.TaskManagerMessage{Msg: &pb.TaskManagerMessage_Acknowledge{Acknowledge: &pb.Acknowledge{Job: "demo", CheckpointId: int64(i + 1)}}}); err != nil {
				t.Error(err)
			}
		}
	}
	runTM(t, TaskManagerConfig{JobManager: d.Addr().String(), ResourceID: "tm-a", Slots: 1, Handler: h})
	tm := r.next(t, "registered").tm
	for i := range n {
		if err := tm.Send(&pb.JobManagerMessage{Msg: &pb.JobManagerMessage_Trigger{Trigger: &pb.Trigger{Job: "demo", CheckpointId: int64(i + 1)}}}); err != nil {
			t.Fatal(err)
		}
	}
	wait := func(what string, count func() int, ch chan struct{}) {
		for count() < n {
			select {
			case <-ch:
			case <-time.After(20 * time.Second):
				t.Fatalf("%s: %d of %d within 20s", what, count(), n)
			}
		}
	}
	wait("triggers", func() int { h.mu.Lock(); defer h.mu.Unlock(); return len(h.triggers) }, h.trigc)
	wait("acks", func() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.msgs) }, r.msgc)
	for i, id := range h.triggers {
		if id != int64(i+1) {
			t.Fatalf("trigger %d arrived as %d", id, i)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.msgs) != n {
		t.Fatalf("%d acks, want %d", len(r.msgs), n)
	}
	for i, m := range r.msgs {
		if id := m.GetAcknowledge().GetCheckpointId(); id != int64(i+1) {
			t.Fatalf("ack %d arrived as %d", id, i)
		}
	}
}

func TestSlowConsumerOverflowClosesSession(t *testing.T) {
	r := newRecorder()
	d := startDispatcher(t, "127.0.0.1:0", r, DispatcherConfig{QueueLimit: 64})
	// Registers, then reads nothing: gRPC's flow-control window fills, the
	// writer blocks, and the queue grows past its limit.
	stream, _ := rawRegister(t, d.Addr().String(), &pb.Register{ProtocolVersion: ProtocolVersion, BuildId: testBuild, ResourceId: "tm-slow", Slots: 1})
	tm := r.next(t, "registered").tm
	big := &pb.JobManagerMessage{Msg: &pb.JobManagerMessage_PrepareJob{PrepareJob: &pb.PrepareJob{Description: strings.Repeat("x", 16<<10)}}}
	var err error
	sent := 0
	for ; sent < 1_000_000; sent++ {
		if err = tm.Send(big); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrQueueOverflow) || !errors.Is(err, ErrSessionClosed) {
		t.Fatalf("after %d sends: %v", sent, err)
	}
	e := r.next(t, "lost")
	if e.tm != tm || !errors.Is(e.reason, ErrQueueOverflow) {
		t.Fatalf("lost %s: %v", e.tm, e.reason)
	}
	if got := d.TaskManagers(); len(got) != 0 {
		t.Fatalf("slots of the closed session: %v", got)
	}
	// The peer sees its stream end once it reads (after the messages that
	// made it through).
	for {
		if _, err := stream.Recv(); err != nil {
			if status.Code(err) != codes.Unavailable {
				t.Fatalf("stream ended with %v", err)
			}
			break
		}
	}
}

func TestUnreachableJobManager(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	start := time.Now()
	_, res := runTM(t, TaskManagerConfig{JobManager: addr, ResourceID: "tm-a", Slots: 1, RegistrationTimeout: 300 * time.Millisecond})
	err = <-res
	want := "JobManager at " + addr + " unreachable for 300ms: start it, or check --jobmanager"
	if !errors.Is(err, ErrJobManagerUnreachable) || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Fatalf("gave up after %s, before the registration timeout", el)
	}
}

func TestPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	_, err = StartDispatcher(addr, DispatcherConfig{BuildID: testBuild})
	want := "JobManager rpc address " + addr + ": address is already in use (another JobManager?): stop that process or choose another --rpc-address"
	if !errors.Is(err, ErrAddressInUse) || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		5 * time.Minute: "5m", time.Hour: "1h", 90 * time.Second: "1m30s",
		300 * time.Millisecond: "300ms", 2 * time.Second: "2s",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%s) = %s, want %s", d, got, want)
		}
	}
}

func TestRegisterAgainReplacesSession(t *testing.T) {
	// A TaskManager that gave up on its JobManager (heartbeat timeout on
	// its side) registers again while the JobManager still holds the old
	// session: the old one is reported lost before the new one registers.
	r := newRecorder()
	d := startDispatcher(t, "127.0.0.1:0", r, DispatcherConfig{})
	reg := &pb.Register{ProtocolVersion: ProtocolVersion, BuildId: testBuild, ResourceId: "tm-a", Slots: 2}
	old, _ := rawRegister(t, d.Addr().String(), reg)
	first := r.next(t, "registered").tm
	rawRegister(t, d.Addr().String(), reg)
	e := r.next(t, "lost")
	if e.tm != first || !errors.Is(e.reason, ErrReplaced) {
		t.Fatalf("lost %s: %v", e.tm, e.reason)
	}
	second := r.next(t, "registered").tm
	if second.Session == first.Session || d.TaskManager("tm-a") != second {
		t.Fatalf("sessions %s then %s, current %v", first.Session, second.Session, d.TaskManager("tm-a"))
	}
	if got := d.TaskManagers(); fmt.Sprint(got) != "[{tm-a 2 2}]" {
		t.Fatalf("slots %v", got)
	}
	for { // the old stream ends
		if _, err := old.Recv(); err != nil {
			break
		}
	}
}

// TestSecondProcessUnderOneIDWaits: a registration under an id whose
// session is alive with another data address (a copied --resource-id, or
// a restart before the old session's loss was noticed) does not replace
// the session: it is refused (AlreadyExists, which the TaskManager logs
// and retries), naming both addresses and the fix.
func TestSecondProcessUnderOneIDWaits(t *testing.T) {
	r := newRecorder()
	d := startDispatcher(t, "127.0.0.1:0", r, DispatcherConfig{})
	rawRegister(t, d.Addr().String(), &pb.Register{ProtocolVersion: ProtocolVersion, BuildId: testBuild, ResourceId: "tm-a", Slots: 2, DataAddress: "10.0.0.1:7000"})
	first := r.next(t, "registered").tm

	conn, err := grpc.NewClient("passthrough:///"+d.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := pb.NewJobManagerClient(conn).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	reg := &pb.Register{ProtocolVersion: ProtocolVersion, BuildId: testBuild, ResourceId: "tm-a", Slots: 2, DataAddress: "10.0.0.2:7000"}
	if err := stream.Send(&pb.TaskManagerMessage{Msg: &pb.TaskManagerMessage_Register{Register: reg}}); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := stream.Recv()
		if err == nil {
			if m.GetRegistered() != nil {
				t.Fatal("the second process under tm-a was registered")
			}
			continue
		}
		if status.Code(err) != codes.AlreadyExists || !strings.Contains(err.Error(), "TaskManager id tm-a is registered already") || !strings.Contains(err.Error(), "give every TaskManager its own --resource-id") {
			t.Fatalf("second registration: %v", err)
		}
		break
	}
	if d.TaskManager("tm-a") != first {
		t.Fatalf("the first session was replaced")
	}
}
