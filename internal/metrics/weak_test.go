package metrics_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/metrics"
)

// A job in WEAKLY_CONSISTENT mode exports its accounting as exact job
// gauges (the recovery times in milliseconds); a job in another mode
// exports none of them.
func TestWeakMetrics(t *testing.T) {
	st := &jobstatus.JobStatus{}
	w := &st.Weak
	w.Failures.Store(3)
	w.TaskRestarts.Store(4)
	w.Replayed.Store(1208)
	w.Lost.Store(2)
	w.Duplicated.Store(1)
	w.Dropped.Store(99)
	w.SnapshotsCompleted.Store(57)
	w.SnapshotsFailed.Store(5)
	w.LastRecoveryNanos.Store(int64(250 * time.Millisecond))
	w.RecoveryNanos.Store(int64(900*time.Millisecond + 999*time.Microsecond))
	w.Recoveries.Store(4)

	reg := prometheus.NewRegistry()
	weak, err := metrics.NewJob(reg, "weak", "weak", st, metrics.Options{Weak: true})
	if err != nil {
		t.Fatal(err)
	}
	defer weak.Unregister()
	other, err := metrics.NewJob(reg, "strong", "strong", &jobstatus.JobStatus{}, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Unregister()
	srv := httptest.NewServer(metrics.Handler(reg, nil))
	defer srv.Close()

	got := scrape(t, srv.URL)
	const labels = `{job_id="weak",job_name="weak"}`
	want := map[string]float64{
		"weir_jobmanager_job_weakFailures":              3,
		"weir_jobmanager_job_weakTaskRestarts":          4,
		"weir_jobmanager_job_weakRecordsReplayed":       1208,
		"weir_jobmanager_job_weakRecordsLost":           2,
		"weir_jobmanager_job_weakRecordsDuplicated":     1,
		"weir_jobmanager_job_weakRecordsDropped":        99,
		"weir_jobmanager_job_weakSnapshotsCompleted":    57,
		"weir_jobmanager_job_weakSnapshotsFailed":       5,
		"weir_jobmanager_job_weakLastRecoveryDuration":  250,
		"weir_jobmanager_job_weakRecoveries":            4,
		"weir_jobmanager_job_weakRecoveryDurationTotal": 900,
	}
	for name, v := range want {
		if g, ok := got[name+labels]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", name+labels, g, ok, v)
		}
	}
	var weakSeries []string
	for _, k := range names(got) {
		if strings.HasPrefix(k, "weir_jobmanager_job_weak") {
			weakSeries = append(weakSeries, k)
			if !strings.HasSuffix(k, labels) {
				t.Errorf("series %s of a job in another mode", k)
			}
		}
	}
	if len(weakSeries) != len(want) {
		t.Errorf("weak series %v, want the %d above", weakSeries, len(want))
	}
	// The job's other metrics are there as in every mode.
	if _, ok := got["weir_jobmanager_job_numRestarts"+labels]; !ok {
		t.Errorf("no numRestarts for the weak job: %v", names(got))
	}
}
