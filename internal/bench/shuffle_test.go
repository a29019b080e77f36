package bench

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestBenchShuffle runs weir bench shuffle small: one JSON object with the
// three modes in order, each with a positive rate and one run; remote
// bytes where channels cross TaskManagers and none in process; about half
// of the records across TCP in the cluster; the ratio of the figures.
func TestBenchShuffle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JobManager and two TaskManager processes")
	}
	const records = 400_000
	r := runWeir(t, time.Minute, "bench", "shuffle", "--records", "400000", "--runs", "1", "--json")
	if r.code != 0 {
		t.Fatalf("weir bench shuffle exited %d; stderr:\n%s", r.code, tail(r.stderr, 3000))
	}
	if n := strings.Count(strings.TrimSpace(r.stdout), "\n"); n != 0 {
		t.Fatalf("printed %d lines, want one JSON object:\n%s", n+1, r.stdout)
	}
	// The shape as a map first: the keys are the contract, whatever the
	// Go types say.
	var raw struct {
		Bench string           `json:"bench"`
		Modes []map[string]any `json:"modes"`
		Ratio *float64         `json:"ratio"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	if raw.Bench != "shuffle" || raw.Ratio == nil || len(raw.Modes) != 3 {
		t.Fatalf("report: bench %q, ratio %v, %d modes; want shuffle, a ratio and 3 modes:\n%s", raw.Bench, raw.Ratio, len(raw.Modes), r.stdout)
	}
	for i, m := range raw.Modes {
		for _, k := range []string{"mode", "records_per_sec", "remote_bytes_per_sec", "runs", "median"} {
			if _, ok := m[k]; !ok {
				t.Errorf("mode %d lacks %q: %v", i, k, m)
			}
		}
	}
	var rep shuffleReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{shuffleCluster, shuffleInProcess, shuffleInProcess2TM} {
		m := rep.Modes[i]
		if m.Mode != want {
			t.Errorf("mode %d is %q, want %q", i, m.Mode, want)
		}
		if m.RecordsPerSec <= 0 || len(m.Runs) != 1 || m.Median.Seconds <= 0 || m.Median.RecordsPerSec != m.RecordsPerSec {
			t.Errorf("mode %s: %.0f records/s, %d runs, median %+v; want a positive rate from one run", m.Mode, m.RecordsPerSec, len(m.Runs), m.Median)
		}
		remote := m.Mode != shuffleInProcess
		if got := m.RemoteBytesPerSec > 0; got != remote {
			t.Errorf("mode %s: %.0f remote bytes/s; want them only where channels cross TaskManagers", m.Mode, m.RemoteBytesPerSec)
		}
	}
	// Each aggregator's accounts are about half of them (key groups of
	// 1000 accounts hashed over 2 subtasks), so about half the records
	// cross; every one of them is at least a byte.
	c := rep.Modes[0].Median
	if c.RemoteRecords < records/4 || c.RemoteRecords > 3*records/4 || c.RemoteBytes < c.RemoteRecords {
		t.Errorf("cluster: %d of %d records and %d bytes crossed TCP; want about half the records", c.RemoteRecords, records, c.RemoteBytes)
	}
	if want := rep.Modes[0].RecordsPerSec / rep.Modes[1].RecordsPerSec; rep.Ratio != want {
		t.Errorf("ratio %v, want cluster/in-process = %v", rep.Ratio, want)
	}
	t.Logf("cluster %.2fM records/s, in-process %.2fM, in-process-2tm %.2fM, ratio %.3f",
		rep.Modes[0].RecordsPerSec/1e6, rep.Modes[1].RecordsPerSec/1e6, rep.Modes[2].RecordsPerSec/1e6, rep.Ratio)
}

// TestBenchShuffleBadInput: a bad flag value is a usage error naming the
// flag, before any process starts.
func TestBenchShuffleBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--records", "0"}, "--records"},
		{[]string{"--keys", "-1"}, "--keys"},
		{[]string{"--runs", "0"}, "--runs"},
		{[]string{"--records", "many"}, "--records"},
	} {
		r := runWeir(t, 30*time.Second, append([]string{"bench", "shuffle"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("bench shuffle %v: exit %d, stderr %q; want exit 2 naming %s", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// TestRunKeyedSumLocal: weir run keyed-sum in process counts one result
// per record, and says so.
func TestRunKeyedSumLocal(t *testing.T) {
	r := runWeir(t, time.Minute, "run", "keyed-sum", "--records", "100000", "--keys", "17", "-p", "2", "--state-dir", t.TempDir(), "-q")
	if r.code != 0 || !strings.Contains(r.stderr, "the sinks counted 100000 results for 100000 records") {
		t.Fatalf("weir run keyed-sum: exit %d, stderr:\n%s", r.code, tail(r.stderr, 2000))
	}
}
