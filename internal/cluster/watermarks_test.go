package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/windows"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/rest"
	"github.com/weirstream/weir/internal/runtime"
)

// windowsResolver builds the built-in windows job (tumbling 100 ms, rate
// limited) writing to spec.Args[0].
func windowsResolver(ctx context.Context, spec deployment.JobSpec) (*dataflow.Graph, runtime.JobConfig, error) {
	env, err := specEnv(spec)
	if err != nil {
		return nil, runtime.JobConfig{}, err
	}
	o := windows.Options{Events: 4000, Keys: 7, Window: windows.Spec{Kind: "tumble", Size: 100}, MaxDisorder: 200, OutOfOrderness: -1, Rate: 2000, Out: spec.Args[0]}
	o.Defaults()
	windows.Build(env, o)
	return hooks.Plan(env).Resolve(ctx, spec.Name)
}

// In cluster mode the task watermarks travel in the TaskManagers'
// heartbeats: the JobManager's GET .../watermarks of the windows vertex
// advances while the job runs on two TaskManagers, and its /metrics has
// every subtask's currentInputWatermark.
func TestClusterWatermarks(t *testing.T) {
	c := startTestCluster(t, JobManagerConfig{RESTAddress: "127.0.0.1:0", Resolve: windowsResolver})
	c.startTM("tm-a", 1)
	c.startTM("tm-b", 1)
	conf := baseConf(2)
	conf["pipeline.auto-watermark-interval"] = "20 ms"
	spec := &pb.JobSpec{Name: "win", Kind: "windows", Args: []string{filepath.Join(c.dir, "out")}, Config: conf}
	if _, err := c.client().Submit(context.Background(), &pb.SubmitRequest{Spec: spec}); err != nil {
		t.Fatalf("submit: %v", err)
	}
	get := func(path string) (int, []byte) {
		resp, err := http.Get(c.restURL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	// The windows vertex is the keyed one, after the source (vertex 0).
	seen := map[int64]bool{}
	sawMetrics := false
	deadline := time.Now().Add(time.Minute)
	for len(seen) < 3 || !sawMetrics {
		if time.Now().After(deadline) {
			t.Fatalf("watermarks seen %v, metrics seen %v; log:\n%s", seen, sawMetrics, c.log.String())
		}
		time.Sleep(20 * time.Millisecond)
		code, b := get("/jobs/win/vertices/1/watermarks")
		if code == http.StatusNotFound {
			continue // not deployed yet
		}
		var ms []rest.Metric
		if err := json.Unmarshal(b, &ms); code != http.StatusOK || err != nil {
			t.Fatalf("GET watermarks: %d %s (%v)", code, b, err)
		}
		if len(ms) == 2 {
			for i, m := range ms {
				wm, err := strconv.ParseInt(m.Value, 10, 64)
				if m.ID != fmt.Sprintf("%d.currentInputWatermark", i) || err != nil {
					t.Fatalf("entry %d: %+v", i, m)
				}
				if wm != math.MinInt64 && wm != math.MaxInt64 {
					seen[wm] = true
				}
			}
		}
		if _, body := get("/metrics"); strings.Contains(string(body), `weir_taskmanager_job_task_currentInputWatermark{job_id="win",job_name="win",subtask_index="1",task_id="1"`) {
			sawMetrics = true
		}
	}
	u := c.wait("win", time.Minute)
	if jobstatus.JobState(u.GetState()) != jobstatus.StateFinished {
		t.Fatalf("job ended %s: %s", u.GetState(), u.GetFailure())
	}
}
