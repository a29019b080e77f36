package rest_test

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/windows"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/rest"
)

// holdLines counts the lines its subtasks write and holds every subtask
// in its first Flush, the final checkpoint's when checkpoints are only
// the final one, until released: the tasks stay deployed with their final
// watermarks and counters.
type holdLines struct {
	written *atomic.Int64
	held    chan<- struct{}
	release <-chan struct{}
}

func (s *holdLines) Open(context.Context, *weir.RuntimeContext) error { return nil }

func (s *holdLines) Write(_ context.Context, b []string) error {
	s.written.Add(int64(len(b)))
	return nil
}

func (s *holdLines) Flush(context.Context) error {
	s.held <- struct{}{}
	<-s.release
	return nil
}

func (s *holdLines) Close(context.Context) error { return nil }

// scrapeTasks returns the weir_taskmanager_job_task_ series of a /metrics
// body as metric -> "task_id/subtask_index" -> value.
func scrapeTasks(t *testing.T, body string) map[string]map[string]float64 {
	t.Helper()
	series := regexp.MustCompile(`^weir_taskmanager_job_task_(\w+)\{job_id="windows",job_name="windows",subtask_index="(\d+)",task_id="(\d+)",task_name="[^"]*"\} (\S+)$`)
	out := map[string]map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		g := series.FindStringSubmatch(sc.Text())
		if g == nil {
			continue
		}
		v, err := strconv.ParseFloat(g[4], 64)
		if err != nil {
			t.Fatalf("series %q: %v", sc.Text(), err)
		}
		if out[g[1]] == nil {
			out[g[1]] = map[string]float64{}
		}
		out[g[1]][g[3]+"/"+g[2]] = v
	}
	return out
}

// A real event-time job (the built-in windows job at p=2, with
// out-of-orderness below its disorder, so some events are late) under the
// REST API and /metrics: while it runs, every subtask's watermark in GET
// .../watermarks only moves forward, and moves; watermarkLag is the scrape
// time minus currentOutputWatermark exactly. Held at the final checkpoint,
// every subtask shows the end of input (Long.MAX_VALUE), no watermarkLag,
// and numLateRecordsDropped sums to the late lines written.
func TestWatermarks(t *testing.T) {
	const p = 2
	cfg := weir.NewConfig()
	for key, v := range map[string]string{
		config.ParallelismDefault:    strconv.Itoa(p),
		config.CheckpointsDir:        filepath.Join(t.TempDir(), "state"),
		config.CheckpointingInterval: "0", // only the final checkpoint: the sinks' first Flush
		config.AutoWatermarkInterval: "20 ms",
	} {
		if err := cfg.Set(key, v); err != nil {
			t.Fatal(err)
		}
	}
	env := weir.NewEnv(weir.WithConfig(cfg))
	o := windows.Options{Events: 3000, Keys: 7, Window: windows.Spec{Kind: "tumble", Size: 100}, MaxDisorder: 200, OutOfOrderness: 20, Rate: 2000}
	o.Defaults()
	lines, late := windows.Pipeline(env, o)
	var written, lateWritten atomic.Int64
	held, release := make(chan struct{}, 2*p), make(chan struct{})
	weir.SinkTo(lines, func() weir.Sink[string] { return &holdLines{written: &written, held: held, release: release} }).Name("hold")
	weir.SinkTo(late, func() weir.Sink[string] { return &holdLines{written: &lateWritten, held: held, release: release} }).Name("hold-late")

	status := hooks.Plan(env).Status
	j := &job{id: "windows", name: "windows", status: status, control: hooks.Plan(env).Control, cfg: hooks.Config(env.Config())}
	clk := &fixedClock{}
	reg := prometheus.NewRegistry()
	m, err := metrics.NewJob(reg, j.id, j.name, status, metrics.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unregister()
	srv := httptest.NewServer(rest.NewHandler(rest.Config{Jobs: jobs(j), Metrics: metrics.Handler(reg, nil)}))
	defer srv.Close()
	url := srv.URL + "/jobs/windows"

	done := make(chan error, 1)
	go func() { done <- env.Execute(context.Background(), "windows") }()
	released := false
	defer func() {
		if !released {
			close(release)
		}
		<-done
	}()
	waitFor(t, "the job to run", func() bool { return status.State() == jobstatus.StateRunning && len(status.Tasks()) > 0 })

	var details rest.JobDetails
	getJSON(t, url, &details)
	var vertices []string
	win := ""
	for _, v := range details.Vertices {
		vertices = append(vertices, v.ID)
		if strings.HasPrefix(v.Name, "windows") {
			win = v.ID
		}
	}
	if win == "" {
		t.Fatalf("no windows vertex in %+v", details.Vertices)
	}

	// Poll the watermarks of every vertex until the job holds at its
	// final checkpoint.
	ids := regexp.MustCompile(`^(\d+)\.currentInputWatermark$`)
	last := map[string]int64{}   // vertex/subtask -> last value seen
	distinct := map[string]int{} // vertex/subtask -> values seen
	lagChecked := 0
	poll := func() {
		for _, v := range vertices {
			var got []rest.Metric
			getJSON(t, url+"/vertices/"+v+"/watermarks", &got)
			for i, mt := range got {
				g := ids.FindStringSubmatch(mt.ID)
				if g == nil || g[1] != strconv.Itoa(i) {
					t.Fatalf("vertex %s: entry %d is %+v, want id %d.currentInputWatermark", v, i, mt, i)
				}
				wm, err := strconv.ParseInt(mt.Value, 10, 64)
				if err != nil {
					t.Fatalf("vertex %s: %+v: value is not a long: %v", v, mt, err)
				}
				k := v + "/" + g[1]
				if prev, ok := last[k]; ok && wm < prev {
					t.Fatalf("vertex %s subtask %s: watermark went back from %d to %d", v, g[1], prev, wm)
				} else if !ok || wm != prev {
					distinct[k]++
				}
				last[k] = wm
			}
		}
		clk.Set(time.UnixMilli(1_000_000_000 + int64(len(last))))
		_, body := call(t, "GET", srv.URL+"/metrics")
		s := scrapeTasks(t, body)
		for k, out := range s["currentOutputWatermark"] {
			lag, ok := s["watermarkLag"][k]
			switch {
			case out == math.MinInt64 || out == math.MaxInt64:
				if ok {
					t.Errorf("task %s: watermarkLag %v with output watermark %v, want none", k, lag, out)
				}
			case !ok || lag != float64(clk.Now().UnixMilli())-out:
				t.Errorf("task %s: watermarkLag %v (present %v), want %v minus the output watermark %v", k, lag, ok, clk.Now().UnixMilli(), out)
			default:
				lagChecked++
			}
		}
	}
	for n := 0; n < 2*p; {
		select {
		case <-held:
			n++
		case <-time.After(20 * time.Millisecond):
			poll()
		}
	}
	poll()
	for _, v := range vertices {
		for sub := range p {
			k := fmt.Sprintf("%s/%d", v, sub)
			// Each subtask showed some watermarks on the way; the end
			// of input is the largest.
			if last[k] != math.MaxInt64 || (v == win && distinct[k] < 3) {
				t.Errorf("vertex %s subtask %d: last watermark %d after %d distinct values, want %d after at least 3 on the windows vertex", v, sub, last[k], distinct[k], int64(math.MaxInt64))
			}
		}
	}
	if lagChecked == 0 {
		t.Error("no scrape saw a task between its first watermark and the end of input: watermarkLag unchecked")
	}
	final := scrapeTasks(t, func() string { _, b := call(t, "GET", srv.URL+"/metrics"); return b }())
	if len(final["watermarkLag"]) != 0 {
		t.Errorf("watermarkLag %v at the end of input, want none", final["watermarkLag"])
	}
	dropped := 0.0
	for k, v := range final["numLateRecordsDropped"] {
		if !strings.HasPrefix(k, win+"/") && v != 0 {
			t.Errorf("task %s dropped %v late records; only the windows vertex %s drops", k, v, win)
		}
		dropped += v
	}
	if dropped == 0 || dropped != float64(lateWritten.Load()) {
		t.Errorf("numLateRecordsDropped sums to %v, want the %d late lines written (> 0)", dropped, lateWritten.Load())
	}
	for k, v := range final["currentInputWatermark"] {
		if v != math.MaxInt64 || final["currentOutputWatermark"][k] != math.MaxInt64 {
			t.Errorf("task %s: input watermark %v, output %v; want both the end of input", k, v, final["currentOutputWatermark"][k])
		}
	}

	close(release)
	released = true
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	done <- nil // for the deferred receive
	var after []rest.Metric
	getJSON(t, url+"/vertices/"+win+"/watermarks", &after)
	if len(after) != 0 {
		t.Errorf("watermarks after the run: %+v, want [] (no running subtasks)", after)
	}
}

// fixedClock is a settable clock for the metrics' watermarkLag.
type fixedClock struct{ ms atomic.Int64 }

func (c *fixedClock) Now() time.Time { return time.UnixMilli(c.ms.Load()) }

func (c *fixedClock) Set(t time.Time) { c.ms.Store(t.UnixMilli()) }
