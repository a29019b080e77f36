package runtime

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/dataflow/dataflowtest"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/jobmaster"
	"github.com/weirstream/weir/internal/network"
)

func tid(v, s int) checkpoint.TaskID { return checkpoint.TaskID{Vertex: v, Subtask: s} }

// TestInboxKeepsOrderWithoutBlocking puts more events than any channel
// buffer would hold with no reader: put never blocks, one signal is
// pending, and take returns every event once, in order.
func TestInboxKeepsOrderWithoutBlocking(t *testing.T) {
	in := newInbox()
	const n = 10_000
	for i := range n {
		in.put(jmEvent{ev: jobmaster.Ack{ID: checkpoint.ID(i)}})
	}
	select {
	case <-in.ready:
	default:
		t.Fatal("no ready signal after put")
	}
	got := in.take(nil)
	if len(got) != n {
		t.Fatalf("took %d events, want %d", len(got), n)
	}
	for i, e := range got {
		if id := e.ev.(jobmaster.Ack).ID; id != checkpoint.ID(i) {
			t.Fatalf("event %d has id %d: order lost", i, id)
		}
	}
	if again := in.take(nil); len(again) != 0 {
		t.Fatalf("second take returned %d events, want 0", len(again))
	}
}

// TestLocalJobMasterGateway checks that every gateway message becomes the
// matching event with execution and attempt, and that messages of another
// job are dropped.
func TestLocalJobMasterGateway(t *testing.T) {
	in := newInbox()
	var g deployment.JobMasterGateway = &localJobMaster{job: "j", in: in}
	x := deployment.ExecutionID{Task: tid(1, 2), Attempt: 3}
	boom := errors.New("boom")
	g.JobPrepared("j", nil)
	g.TaskStateChanged("j", x, deployment.ExecFailed, boom)
	g.Acknowledge("j", x, 7, checkpoint.TaskState{Task: x.Task})
	g.Decline("j", x, 8, "disk full", true)
	g.EndOfData("j", x)
	g.Acknowledge("other", x, 9, checkpoint.TaskState{})
	got := in.take(nil)
	want := []jobmaster.Event{
		jobmaster.Prepared{},
		jobmaster.StateChanged{Exec: x, State: deployment.ExecFailed, Err: boom},
		jobmaster.Ack{Exec: x, ID: 7, State: checkpoint.TaskState{Task: x.Task}},
		jobmaster.Decline{Exec: x, ID: 8, Reason: "disk full", Storage: true},
		jobmaster.EndOfData{Exec: x},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if g, w := fmt.Sprintf("%#v", got[i].ev), fmt.Sprintf("%#v", want[i]); g != w {
			t.Errorf("event %d = %s, want %s", i, g, w)
		}
	}
}

// recorder is a JobMasterGateway that records every call as a line and
// lets a test wait for a number of them.
type recorder struct {
	mu    sync.Mutex
	lines []string
	more  chan struct{}
}

func newRecorder() *recorder { return &recorder{more: make(chan struct{}, 1)} }

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
	r.mu.Unlock()
	select {
	case r.more <- struct{}{}:
	default:
	}
}

// wait returns the recorded lines once there are at least n.
func (r *recorder) wait(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		lines := append([]string(nil), r.lines...)
		r.mu.Unlock()
		if len(lines) >= n {
			return lines
		}
		select {
		case <-r.more:
		case <-deadline:
			t.Fatalf("waited for %d reports, have %d: %q", n, len(lines), lines)
		}
	}
}

func (r *recorder) JobPrepared(job string, err error) { r.add("prepared %s %v", job, err) }
func (r *recorder) TaskStateChanged(job string, x deployment.ExecutionID, st deployment.ExecState, err error) {
	r.add("state %s %s %s %v", job, x, st, err)
}
func (r *recorder) Acknowledge(job string, x deployment.ExecutionID, id checkpoint.ID, _ checkpoint.TaskState) {
	r.add("ack %s %s %d", job, x, id)
}
func (r *recorder) Decline(job string, x deployment.ExecutionID, id checkpoint.ID, reason string, _ bool) {
	r.add("decline %s %s %d %s", job, x, id, reason)
}
func (r *recorder) EndOfData(job string, x deployment.ExecutionID) { r.add("eod %s %s", job, x) }

// TestExecGatewayAddsJobAndAttempt: a task reports by TaskID; its gateway
// names the job and the execution attempt.
func TestExecGatewayAddsJobAndAttempt(t *testing.T) {
	r := newRecorder()
	var g JobGateway = execGateway{jm: r, job: "j", attempt: 4}
	g.Acknowledge(tid(0, 1), 5, checkpoint.TaskState{})
	g.Decline(tid(0, 1), 6, "no", false)
	g.EndOfData(tid(0, 1))
	got := strings.Join(r.wait(t, 3), "\n")
	want := "ack j 0/1#4 5\ndecline j 0/1#4 6 no\neod j 0/1#4"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// twoStageGraph is src(2) -hash-> agg(2), built for layout only: its nodes
// have no factories.
func twoStageGraph(t *testing.T) *dataflow.JobGraph {
	t.Helper()
	jg, err := dataflow.BuildJobGraph(dataflowtest.Graph(dataflowtest.Node("src", 2), dataflowtest.Node("agg", 2, dataflowtest.Hash(0))), 8)
	if err != nil {
		t.Fatal(err)
	}
	return jg
}

// TestDescribeTasksLayout checks the channel layout a JobMaster sends:
// inputs in gate order (producer subtasks in order), outputs per edge per
// consumer subtask, each naming the peer's current execution and
// TaskManager.
func TestDescribeTasksLayout(t *testing.T) {
	jg := twoStageGraph(t)
	attempts := map[checkpoint.TaskID]int{tid(0, 0): 1, tid(0, 1): 0, tid(1, 0): 2, tid(1, 1): 0}
	exec := func(t checkpoint.TaskID) deployment.ExecutionID {
		return deployment.ExecutionID{Task: t, Attempt: attempts[t]}
	}
	place := func(t checkpoint.TaskID) (deployment.ResourceID, string, int) {
		return deployment.ResourceID(fmt.Sprintf("tm-%d", t.Subtask)), fmt.Sprintf("addr-%d", t.Subtask), t.Subtask
	}
	tds := describeTasks(jg, []checkpoint.TaskID{tid(0, 1), tid(1, 0)}, exec, place)
	render := func(cs []deployment.ChannelDesc) string {
		var s []string
		for _, c := range cs {
			s = append(s, fmt.Sprintf("%s@%s(%s)", c.Peer, c.TM, c.DataAddress))
		}
		return strings.Join(s, " ")
	}
	if len(tds) != 2 {
		t.Fatalf("%d task deployments, want 2", len(tds))
	}
	src, agg := tds[0], tds[1]
	if src.Exec != exec(tid(0, 1)) || src.Slot != 1 || len(src.Inputs) != 0 || len(src.Outputs) != 1 {
		t.Fatalf("source deployment %+v", src)
	}
	if got, want := render(src.Outputs[0]), "1/0#2@tm-0(addr-0) 1/1#0@tm-1(addr-1)"; got != want {
		t.Errorf("source outputs %s, want %s", got, want)
	}
	if agg.Exec != exec(tid(1, 0)) || agg.Slot != 0 || len(agg.Outputs) != 0 {
		t.Fatalf("aggregator deployment %+v", agg)
	}
	if got, want := render(agg.Inputs), "0/0#1@tm-0(addr-0) 0/1#0@tm-1(addr-1)"; got != want {
		t.Errorf("aggregator inputs %s, want %s", got, want)
	}
}

// TestPartitionsChannel checks how a producer finds its channel: the
// consumer's registered gate at the producer's index, an error naming the
// defect for an unknown consumer, a channel that belongs to another
// producer, and a consumer on another TaskManager when the executor has no
// data plane.
func TestPartitionsChannel(t *testing.T) {
	p := newPartitions("tm-a")
	l := &taskLinks{self: "tm-a", job: "j", parts: p, credits: 1}
	noCodec := func() (dataflow.ChannelCodec, error) { return nil, errors.New("no codec needed") }
	prod0 := deployment.ExecutionID{Task: tid(0, 0)}
	prod1 := deployment.ExecutionID{Task: tid(0, 1)}
	cons := deployment.ExecutionID{Task: tid(1, 0), Attempt: 1}
	g := network.NewGate(2, 1)
	p.register(cons, g, []deployment.ChannelDesc{{Peer: prod0, TM: "tm-a"}, {Peer: prod1, TM: "tm-a"}})
	c, err := l.sender(prod1, 0, 0, 1, deployment.ChannelDesc{Peer: cons, TM: "tm-a"}, noCodec)
	if err != nil || c != network.Sender(g.Channel(1)) {
		t.Fatalf("channel = %+v, %v; want the gate's channel 1", c, err)
	}
	for _, tc := range []struct {
		name     string
		producer deployment.ExecutionID
		consumer deployment.ChannelDesc
		index    int
		want     string
	}{
		{"old attempt", prod0, deployment.ChannelDesc{Peer: deployment.ExecutionID{Task: tid(1, 0)}, TM: "tm-a"}, 0, "is not deployed on TaskManager tm-a"},
		{"another producer's channel", prod0, deployment.ChannelDesc{Peer: cons, TM: "tm-a"}, 1, "does not come from it"},
		{"index out of range", prod0, deployment.ChannelDesc{Peer: cons, TM: "tm-a"}, 2, "does not come from it"},
		{"remote consumer", prod0, deployment.ChannelDesc{Peer: cons, TM: "tm-b", DataAddress: "10.0.0.2:6124"}, 0,
			`its consumer 1/0#1 runs on TaskManager tm-b ("10.0.0.2:6124"), and TaskManager tm-a has no data plane`},
	} {
		if _, err := l.sender(tc.producer, 0, 0, tc.index, tc.consumer, noCodec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if len(l.outs) != 0 {
		t.Errorf("%d remote channels opened without a data plane", len(l.outs))
	}
	p.release(cons)
	if _, err := l.sender(prod1, 0, 0, 1, deployment.ChannelDesc{Peer: cons, TM: "tm-a"}, noCodec); err == nil {
		t.Error("a released consumer's channel was still found")
	}
}

// TestTaskExecutorRefusals drives a TaskExecutor through its gateway
// without running a task: a failed prepare, a deploy of a job it never
// prepared, a deployment whose layout does not match the graph (the
// execution it fails for reports FAILED, the others CANCELED), and calls
// for executions it does not know, which are ignored.
func TestTaskExecutorRefusals(t *testing.T) {
	r := newRecorder()
	jg := twoStageGraph(t)
	te := NewTaskExecutor(TaskExecutorConfig{ID: "tm-a", JobMaster: r, Resolve: func(spec deployment.JobSpec, _ string) (*PreparedJob, error) {
		if spec.Name != "j" {
			return nil, errors.New("unknown job")
		}
		return &PreparedJob{Graph: jg, Config: JobConfig{CreditsPerChannel: 2}}, nil
	}})
	defer te.Close()
	var gw deployment.TaskManagerGateway = te
	if gw.ID() != "tm-a" {
		t.Fatalf("ID = %s", gw.ID())
	}
	gw.Deploy(deployment.Deployment{Job: "y", Tasks: []deployment.TaskDeployment{{Exec: deployment.ExecutionID{Task: tid(0, 0)}}}})
	gw.PrepareJob(deployment.JobSpec{Name: "x"}, "")
	gw.Deploy(deployment.Deployment{Job: "x", Tasks: []deployment.TaskDeployment{{Exec: deployment.ExecutionID{Task: tid(0, 0)}}}})
	gw.PrepareJob(deployment.JobSpec{Name: "j"}, "")
	// agg/0 gets one input channel where the graph has two; src/0 comes
	// first and is never started.
	gw.Deploy(deployment.Deployment{Job: "j", Tasks: []deployment.TaskDeployment{
		{Exec: deployment.ExecutionID{Task: tid(0, 0), Attempt: 1}, Outputs: [][]deployment.ChannelDesc{{{Peer: deployment.ExecutionID{Task: tid(1, 0), Attempt: 1}, TM: "tm-a"}}}},
		{Exec: deployment.ExecutionID{Task: tid(1, 0), Attempt: 1}, Inputs: []deployment.ChannelDesc{{Peer: deployment.ExecutionID{Task: tid(0, 0), Attempt: 1}, TM: "tm-a"}}},
	}})
	// Preparations run on goroutines of their own: reports of different
	// jobs interleave in any order.
	lines := r.wait(t, 6)
	slices.Sort(lines)
	gw.Cancel("j", []deployment.ExecutionID{{Task: tid(0, 0), Attempt: 1}})
	gw.Trigger("j", deployment.ExecutionID{Task: tid(0, 0), Attempt: 1}, checkpoint.Barrier{ID: 1})
	gw.NotifyComplete("j", 1, checkpoint.Periodic)
	gw.NotifyAborted("nope", 1)
	gw.StopSources("j", nil)
	gw.ReleaseJob("j")
	want := []string{
		"prepared j <nil>",
		"prepared x TaskManager tm-a: prepare job x: unknown job",
		"state j 0/0#1 CANCELED <nil>",
		"state j 1/0#1 FAILED deploy 1/0#1: 1 input channels, vertex \"agg\" has 2",
		"state x 0/0#0 FAILED TaskManager tm-a: prepare job x: unknown job",
		"state y 0/0#0 FAILED TaskManager tm-a has not prepared job y: PrepareJob must come before Deploy",
	}
	if got := strings.Join(lines, "\n"); got != strings.Join(want, "\n") {
		t.Fatalf("reports\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
	if got := te.Report("j"); len(got) != 0 {
		t.Errorf("Report = %+v, want nothing running", got)
	}
}
