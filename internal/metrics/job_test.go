package metrics_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/metrics"
)

// holdSink counts what its subtasks write and, once all events were
// written, holds every subtask in Flush (the final checkpoint) until
// released: the tasks stay deployed with their final counts.
type holdSink struct {
	total   int64
	written *atomic.Int64
	held    chan<- struct{}
	release <-chan struct{}
}

func (s *holdSink) Open(context.Context, *weir.RuntimeContext) error { return nil }

func (s *holdSink) Write(_ context.Context, b []demo.Result) error {
	s.written.Add(int64(len(b)))
	return nil
}

func (s *holdSink) Flush(context.Context) error {
	if s.written.Load() == s.total {
		s.held <- struct{}{}
		<-s.release
	}
	return nil
}

func (s *holdSink) Close(context.Context) error { return nil }

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }

// scrape GETs /metrics and returns every series of weir's metrics as
// "name{labels}" -> value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := httpGet(url)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(resp))
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "weir_") {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out[l[:i]] = v
	}
	return out
}

// names returns the sorted series keys of m.
func names(m map[string]float64) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var taskSeries = regexp.MustCompile(`^(weir_taskmanager_job_task_\w+)\{job_id="demo",job_name="demo",subtask_index="(\d)",task_id="(\d)",task_name="([^"]+)"\}$`)

// A scrape of a job holding its final counts: exact job-level values,
// one series per subtask and metric, records in == records out of the
// sources == events, rates and back pressure 0 once nothing moves; after
// the job ended the task series are gone and uptime is -1.
func TestJobMetrics(t *testing.T) {
	const n, k, p = 20_000, 17, 2
	cfg := weir.NewConfig()
	for key, v := range map[string]string{
		config.ParallelismDefault:    strconv.Itoa(p),
		config.CheckpointsDir:        filepath.Join(t.TempDir(), "state"),
		config.CheckpointingInterval: "0", // only the final checkpoint
	} {
		if err := cfg.Set(key, v); err != nil {
			t.Fatal(err)
		}
	}
	env := weir.NewEnv(weir.WithConfig(cfg))
	var written atomic.Int64
	held, release := make(chan struct{}, p), make(chan struct{})
	weir.SinkTo(demo.Aggregate(env, demo.Options{Events: n, Keys: k}), func() weir.Sink[demo.Result] {
		return &holdSink{total: n, written: &written, held: held, release: release}
	}).Name("hold")

	clk := &clock{}
	reg := prometheus.NewRegistry()
	m, err := metrics.NewJob(reg, "demo", "demo", hooks.Plan(env).Status, metrics.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unregister()
	if _, err := metrics.NewJob(reg, "demo", "demo", hooks.Plan(env).Status, metrics.Options{}); err == nil {
		t.Error("a second collector for the same job registered; want an error")
	}
	srv := httptest.NewServer(metrics.Handler(reg, nil))
	defer srv.Close()

	done := make(chan error, 1)
	go func() { done <- env.Execute(context.Background(), "demo") }()
	released := false
	defer func() {
		if !released {
			close(release)
		}
		<-done
	}()
	for range p {
		<-held
	}
	start, _ := hooks.Plan(env).Status.Times()
	clk.Set(start.Add(5 * time.Second))
	first := scrape(t, srv.URL+"/metrics")
	clk.Set(start.Add(15 * time.Second))
	second := scrape(t, srv.URL+"/metrics")

	wantJob := map[string]float64{
		`weir_jobmanager_job_lastCheckpointAlignmentBuffered{job_id="demo",job_name="demo"}`:  0,
		`weir_jobmanager_job_lastCheckpointPersistedData{job_id="demo",job_name="demo"}`:      0,
		`weir_jobmanager_job_lastCheckpointProcessedData{job_id="demo",job_name="demo"}`:      0,
		`weir_jobmanager_job_lastCheckpointDuration{job_id="demo",job_name="demo"}`:           0,
		`weir_jobmanager_job_lastCheckpointSize{job_id="demo",job_name="demo"}`:               0,
		`weir_jobmanager_job_lastCheckpointFullSize{job_id="demo",job_name="demo"}`:           0,
		`weir_jobmanager_job_lastCheckpointRestoreTimestamp{job_id="demo",job_name="demo"}`:   0,
		`weir_jobmanager_job_lastRestoreDuration{job_id="demo",job_name="demo"}`:              0,
		`weir_jobmanager_job_lastCompletedCheckpointId{job_id="demo",job_name="demo"}`:        0,
		`weir_jobmanager_job_lastRestoredCheckpointId{job_id="demo",job_name="demo"}`:         0,
		`weir_jobmanager_job_numRestarts{job_id="demo",job_name="demo"}`:                      0,
		`weir_jobmanager_job_numberOfLostTransactions{job_id="demo",job_name="demo"}`:         0,
		`weir_jobmanager_job_numberOfCompletedCheckpoints{job_id="demo",job_name="demo"}`:     0,
		`weir_jobmanager_job_numberOfFailedCheckpoints{job_id="demo",job_name="demo"}`:        0,
		`weir_jobmanager_job_numberOfFailedCheckpointsStorage{job_id="demo",job_name="demo"}`: 0,
		`weir_jobmanager_job_checkpointStorageFailing{job_id="demo",job_name="demo"}`:         0,
		`weir_jobmanager_job_numberOfInProgressCheckpoints{job_id="demo",job_name="demo"}`:    1, // the final one, held
		`weir_jobmanager_job_totalNumberOfCheckpoints{job_id="demo",job_name="demo"}`:         1,
		`weir_jobmanager_job_uptime{job_id="demo",job_name="demo"}`:                           5000,
	}
	// Per task metric: the sum over subtasks (by task name) and the
	// subtasks seen.
	type taskSum struct {
		sum      float64
		subtasks string
	}
	sums := func(m map[string]float64, metric string) map[string]taskSum {
		out := map[string]taskSum{}
		for _, key := range names(m) {
			g := taskSeries.FindStringSubmatch(key)
			if g == nil || g[1] != metric {
				continue
			}
			s := out[g[3]+" "+g[4]]
			s.sum += m[key]
			s.subtasks += g[2]
			out[g[3]+" "+g[4]] = s
		}
		return out
	}
	for i, got := range []map[string]float64{first, second} {
		for key, want := range wantJob {
			if key == `weir_jobmanager_job_uptime{job_id="demo",job_name="demo"}` {
				want += float64(i) * 10_000
			}
			if v, ok := got[key]; !ok || v != want {
				t.Errorf("scrape %d: %s = %v (present %v), want %v", i+1, key, v, ok, want)
			}
		}
		tasks := 0
		for _, key := range names(got) {
			if strings.HasPrefix(key, "weir_taskmanager_") {
				tasks++
				if taskSeries.FindStringSubmatch(key) == nil {
					t.Errorf("scrape %d: series %s has unexpected labels", i+1, key)
				}
			}
		}
		// 2 vertices x 2 subtasks x (in, out, back pressure, alignment
		// time, credits, input and output watermark, late records, and
		// the busy, idle and backpressured times and rates), plus the two
		// record rates from the second scrape on; no watermarkLag, the
		// bounded input's end sent the largest watermark.
		if want := 2 * p * (14 + 2*i); tasks != want {
			t.Errorf("scrape %d: %d task series, want %d:\n%s", i+1, tasks, want, strings.Join(names(got), "\n"))
		}
		for metric, want := range map[string]map[string]taskSum{
			"weir_taskmanager_job_task_numRecordsIn":  {"0 events": {0, "01"}, "1 aggregate -> hold": {n, "01"}},
			"weir_taskmanager_job_task_numRecordsOut": {"0 events": {n, "01"}, "1 aggregate -> hold": {0, "01"}},
		} {
			if got := sums(got, metric); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("scrape %d: %s by task %v, want %v", i+1, metric, got, want)
			}
		}
	}
	// Nothing moved between the scrapes: every rate is 0, and no task
	// waited for credit since the first scrape's sample.
	for _, metric := range []string{"numRecordsInPerSecond", "numRecordsOutPerSecond", "isBackPressured"} {
		want := map[string]taskSum{"0 events": {0, "01"}, "1 aggregate -> hold": {0, "01"}}
		if got := sums(second, "weir_taskmanager_job_task_"+metric); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("second scrape: %s by task %v, want %v", metric, got, want)
		}
	}

	close(release)
	released = true
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	done <- nil // for the deferred receive
	st := hooks.Plan(env).Status
	hist := st.Checkpoints(time.Now())
	if len(hist) != 1 || hist[0].Status != jobstatus.CheckpointCompleted {
		t.Fatalf("history %+v, want the final checkpoint completed", hist)
	}
	after := scrape(t, srv.URL+"/metrics")
	want := map[string]float64{}
	for key, v := range wantJob {
		want[key] = v
	}
	job := `{job_id="demo",job_name="demo"}`
	want["weir_jobmanager_job_lastCheckpointDuration"+job] = float64(hist[0].Duration.Milliseconds())
	want["weir_jobmanager_job_lastCheckpointSize"+job] = float64(hist[0].CheckpointedSize)
	want["weir_jobmanager_job_lastCheckpointFullSize"+job] = float64(hist[0].StateSize)
	want["weir_jobmanager_job_lastCheckpointAlignmentBuffered"+job] = float64(hist[0].AlignmentBufferedBytes)
	want["weir_jobmanager_job_lastCheckpointProcessedData"+job] = float64(hist[0].ProcessedInFlightBytes)
	want["weir_jobmanager_job_lastCheckpointPersistedData"+job] = float64(hist[0].PersistedInFlightBytes)
	want["weir_jobmanager_job_lastCompletedCheckpointId"+job] = float64(hist[0].ID)
	want["weir_jobmanager_job_numberOfCompletedCheckpoints"+job] = 1
	want["weir_jobmanager_job_numberOfInProgressCheckpoints"+job] = 0
	want["weir_jobmanager_job_uptime"+job] = -1
	if fmt.Sprint(after) != fmt.Sprint(want) {
		t.Errorf("after the run:\n got %v\nwant %v", after, want)
	}
	// A heap backend's checkpoints are full: what one persists is all.
	if hist[0].StateSize <= 0 || hist[0].CheckpointedSize != hist[0].StateSize {
		t.Errorf("final checkpoint state size %d, checkpointed %d; want > 0 (17 accounts' totals), both equal", hist[0].StateSize, hist[0].CheckpointedSize)
	}
}
