package rest_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/rest"
)

// GET /jobs/{jobid} of a job in WEAKLY_CONSISTENT mode carries its
// failover accounting as the weak object, durations in milliseconds, and
// its checkpoint config names the mode and the in-flight log bound; a job
// in another mode has neither.
func TestWeakAccounting(t *testing.T) {
	weakCfg := config.New()
	for k, v := range map[string]string{
		config.CheckpointingMode:         "weakly-consistent",
		config.WeakInFlightLogMaxRecords: "5000",
	} {
		if err := weakCfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
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
	weak := &job{id: "weak", name: "demo", status: st, cfg: weakCfg}
	strong := &job{id: "strong", name: "demo", status: &jobstatus.JobStatus{}, cfg: config.New()}
	srv := httptest.NewServer(rest.NewHandler(rest.Config{Jobs: jobs(weak, strong)}))
	defer srv.Close()

	var d rest.JobDetails
	getJSON(t, srv.URL+"/jobs/weak", &d)
	want := rest.WeakAccounting{
		Failures: 3, TaskRestarts: 4, RecordsReplayed: 1208, RecordsLost: 2, RecordsDuplicated: 1, RecordsDropped: 99,
		SnapshotsCompleted: 57, SnapshotsFailed: 5, Recoveries: 4, LastRecoveryDuration: 250, RecoveryDurationTotal: 900,
	}
	if d.Weak == nil || *d.Weak != want {
		t.Errorf("weak of a weak job = %+v, want %+v", d.Weak, want)
	}
	_, body := call(t, "GET", srv.URL+"/jobs/weak")
	if !strings.Contains(body, `"weak":{"failures":3,"task-restarts":4,"records-replayed":1208,"records-lost":2,"records-duplicated":1,"records-dropped":99,"snapshots-completed":57,"snapshots-failed":5,"recoveries":4,"last-recovery-duration":250,"recovery-duration-total":900}`) {
		t.Errorf("GET /jobs/weak: the weak object is not as documented:\n%s", body)
	}
	var c rest.CheckpointConfig
	getJSON(t, srv.URL+"/jobs/weak/checkpoints/config", &c)
	if c.Mode != "weakly_consistent" || c.WeakInFlightLogMaxRecords != 5000 {
		t.Errorf("checkpoint config of a weak job: mode %q, log bound %d; want weakly_consistent, 5000", c.Mode, c.WeakInFlightLogMaxRecords)
	}

	for _, path := range []string{"/jobs/strong", "/jobs/strong/checkpoints/config"} {
		if _, body := call(t, "GET", srv.URL+path); strings.Contains(body, "weak") {
			t.Errorf("GET %s of an exactly-once job mentions weak mode: %s", path, body)
		}
	}
}
