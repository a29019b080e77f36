package metrics_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/metrics"
)

// The gauges operators publish are exported under their own names with
// the job's and the task's labels besides theirs, and no longer once the
// job is unregistered.
func TestOperatorGauges(t *testing.T) {
	var g jobstatus.Gauges
	g.Set("weir_test_lag_bytes", 5, "slot", "a")
	g.Set("weir_test_lag_bytes", 7, "slot", "a") // the last value counts
	g.Set("weir_test_lag_bytes", 1, "slot", "b")
	st := &jobstatus.JobStatus{}
	(*jobstatus.Recorder)(st).SetTaskSource(func() []jobstatus.TaskStats {
		return []jobstatus.TaskStats{{Vertex: 0, Name: "cdc", Subtask: 0, Gauges: g.Snapshot()}}
	})
	reg := prometheus.NewRegistry()
	j, err := metrics.NewJob(reg, "id", "cdc-job", st, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := `weir_test_lag_bytes{job_id="id",job_name="cdc-job",slot="a",subtask_index="0",task_id="0",task_name="cdc"} 7
weir_test_lag_bytes{job_id="id",job_name="cdc-job",slot="b",subtask_index="0",task_id="0",task_name="cdc"} 1
`
	if got := gaugeSeries(t, reg, "weir_test_lag_bytes"); got != want {
		t.Fatalf("scraped\n%s\nwant\n%s", got, want)
	}
	j.Unregister()
	if got := gaugeSeries(t, reg, "weir_test_lag_bytes"); got != "" {
		t.Fatalf("after Unregister: %s, want nothing", got)
	}
}

// gaugeSeries returns the series of the family name in reg, in the text
// format, without its HELP and TYPE lines.
func gaugeSeries(t *testing.T, reg *prometheus.Registry, name string) string {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		if f.GetHelp() != metrics.HelpOperatorGauge {
			t.Errorf("help %q", f.GetHelp())
		}
		if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	for _, l := range strings.SplitAfter(b.String(), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}
