package app

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/jobs/windows"
	"github.com/weirstream/weir/internal/rest"
)

// windowsJob runs the built-in windows job (tumbling 100 ms windows,
// rate limited so that it runs for a second or two) into --out.
func windowsJob() Job {
	return Job{
		Name: "windows",
		Define: func(fs *pflag.FlagSet) Run {
			var out string
			fs.StringVar(&out, "out", "", "output folder")
			MarkPath(fs, "out")
			return Run{Build: func(env *weir.Env) error {
				o := windows.Options{Events: 3000, Keys: 7, Window: windows.Spec{Kind: "tumble", Size: 100}, MaxDisorder: 200, OutOfOrderness: -1, Rate: 2000, Out: out}
				o.Defaults()
				windows.Build(env, o)
				return nil
			}}
		},
	}
}

// A local run with --rest-address serves the event-time observability of
// a job with a WatermarkStrategy: GET .../watermarks of the windows vertex
// advances while it runs, and /metrics has the watermark series.
func TestLocalRESTWatermarks(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	p, _, stderr := testProgram(nil)
	p.Jobs = []Job{windowsJob()}
	done := make(chan int, 1)
	go func() {
		done <- p.Run(context.Background(), []string{"run", "windows", "--out", filepath.Join(dir, "out"), "-q",
			"--rest-address", addr, "-D", "parallelism.default=2", "-D", "state.checkpoints.dir=" + dir, "-D", "pipeline.auto-watermark-interval=20 ms"})
	}()
	get := func(path string) (int, []byte) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, nil // not listening yet, or already stopped
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	win := ""
	seen := map[int64]bool{}
	metricsSeen := false
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var code int
loop:
	for {
		select {
		case code = <-done:
			break loop
		case <-tick.C:
		}
		if win == "" {
			var d rest.JobDetails
			if c, b := get("/jobs/windows"); c == http.StatusOK && json.Unmarshal(b, &d) == nil {
				for _, v := range d.Vertices {
					if strings.HasPrefix(v.Name, "windows") {
						win = v.ID
					}
				}
			}
			continue
		}
		var ms []rest.Metric
		if c, b := get("/jobs/windows/vertices/" + win + "/watermarks"); c == http.StatusOK && json.Unmarshal(b, &ms) == nil {
			for _, m := range ms {
				if wm, err := strconv.ParseInt(m.Value, 10, 64); err == nil && wm != math.MinInt64 && wm != math.MaxInt64 {
					seen[wm] = true
				}
			}
		}
		if c, b := get("/metrics"); c == http.StatusOK && strings.Contains(string(b), `weir_taskmanager_job_task_currentOutputWatermark{job_id="windows",job_name="windows",subtask_index="0",task_id="`+win+`"`) {
			metricsSeen = true
		}
	}
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if win == "" || len(seen) < 3 || !metricsSeen {
		t.Errorf("windows vertex %q: %d distinct watermarks seen (want at least 3), watermark metrics seen %v; stderr:\n%s", win, len(seen), metricsSeen, stderr)
	}
}
