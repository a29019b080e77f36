package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/runtime"
)

// gaugeSource emits n numbers, one per millisecond, and publishes how
// many it emitted as a gauge, as a connector publishes its lag.
type gaugeSource struct {
	rc   *weir.RuntimeContext
	n, i int64
}

func (s *gaugeSource) Open(_ context.Context, rc *weir.RuntimeContext) error {
	s.rc = rc
	return nil
}

func (s *gaugeSource) Read(_ context.Context, dst []int64, _ int) ([]int64, error) {
	if s.i >= s.n {
		return dst, io.EOF
	}
	time.Sleep(time.Millisecond)
	s.i++
	s.rc.SetGauge("weir_test_source_emitted", float64(s.i), "slot", fmt.Sprintf("s%d", s.rc.Subtask()))
	return append(dst, s.i), nil
}

func (s *gaugeSource) SnapshotState(int64) error   { return nil }
func (s *gaugeSource) Close(context.Context) error { return nil }

func gaugeResolver(ctx context.Context, spec deployment.JobSpec) (*dataflow.Graph, runtime.JobConfig, error) {
	env, err := specEnv(spec)
	if err != nil {
		return nil, runtime.JobConfig{}, err
	}
	s := weir.FromSource(env, func() weir.Source[int64] { return &gaugeSource{n: 3000} }).UID("src")
	weir.SinkTo(s, func() weir.Sink[int64] { return discardSink{} }).UID("sink")
	return hooks.Plan(env).Resolve(ctx, spec.Name)
}

// A gauge an operator publishes (weir.RuntimeContext.SetGauge, as the
// CDC source publishes its replication lag) reaches the JobManager's
// /metrics in cluster mode, carried by the TaskManagers' heartbeats,
// with the job's and the task's labels besides its own.
func TestClusterOperatorGauges(t *testing.T) {
	c := startTestCluster(t, JobManagerConfig{RESTAddress: "127.0.0.1:0", Resolve: gaugeResolver})
	c.startTM("tm-a", 1)
	c.startTM("tm-b", 1)
	spec := &pb.JobSpec{Name: "gauges", Kind: "gauges", Config: baseConf(2)}
	if _, err := c.client().Submit(context.Background(), &pb.SubmitRequest{Spec: spec}); err != nil {
		t.Fatalf("submit: %v", err)
	}
	want := []string{
		`weir_test_source_emitted{job_id="gauges",job_name="gauges",slot="s0",subtask_index="0",task_id="0",task_name=`,
		`weir_test_source_emitted{job_id="gauges",job_name="gauges",slot="s1",subtask_index="1",task_id="0",task_name=`,
	}
	deadline := time.Now().Add(time.Minute)
	var body string
	for {
		resp, err := http.Get(c.restURL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		if strings.Contains(body, want[0]) && strings.Contains(body, want[1]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the JobManager's /metrics lacks the source's gauges %q:\n%s", want, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	u := c.wait("gauges", time.Minute)
	if jobstatus.JobState(u.GetState()) != jobstatus.StateFinished {
		t.Fatalf("job ended %s: %s", u.GetState(), u.GetFailure())
	}
}

// A TaskManager's own /metrics exports the gauges of its tasks' reports
// with the task series' labels.
func TestTaskManagerOperatorGauges(t *testing.T) {
	reports := []*pb.TaskReport{{
		Job:    "j",
		Exec:   &pb.ExecutionID{Vertex: 2, Subtask: 1},
		Gauges: gaugesToPB([]jobstatus.Gauge{{Name: "weir_test_lag", Labels: []jobstatus.Label{{Key: "slot", Value: "a"}}, Value: 4}}),
	}}
	reg := prometheus.NewRegistry()
	reg.MustRegister(gaugeCollector{func() []*pb.TaskReport { return reports }})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(fams) != 1 || fams[0].GetName() != "weir_test_lag" || len(fams[0].GetMetric()) != 1 {
		t.Fatalf("gathered %v", fams)
	}
	m := fams[0].GetMetric()[0]
	var labels []string
	for _, l := range m.GetLabel() {
		labels = append(labels, l.GetName()+"="+l.GetValue())
	}
	if got := strings.Join(labels, ","); got != "job_name=j,slot=a,subtask_index=1,task_id=2" || m.GetGauge().GetValue() != 4 {
		t.Fatalf("labels %s value %v", got, m.GetGauge().GetValue())
	}
	if back := gaugesFromPB(reports[0].GetGauges()); len(back) != 1 || back[0].Name != "weir_test_lag" || back[0].Labels[0] != (jobstatus.Label{Key: "slot", Value: "a"}) {
		t.Fatalf("round trip %+v", back)
	}
}
