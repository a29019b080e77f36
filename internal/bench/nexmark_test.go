package bench

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// nexmarkFields are the JSON fields issue 13 names, in order.
var nexmarkFields = []string{"query", "state_backend", "events", "seconds", "cpu_seconds", "events_per_sec",
	"events_per_core_second", "generator_events_per_core_second", "baseline_events_per_core_second",
	"ratio_to_baseline", "flink_events_per_core_second"}

// bench nexmark --json prints one object {"queries": [...]} with the
// contract's fields first, in order, and positive figures.
func TestNexmarkBenchJSON(t *testing.T) {
	r := runWeir(t, 3*time.Minute, "bench", "nexmark", "--query", "q0", "--events", "200000", "--json")
	if r.code != 0 {
		t.Fatalf("weir bench nexmark exited %d; stderr:\n%s", r.code, tail(r.stderr, 3000))
	}
	out := strings.TrimSpace(r.stdout)
	if strings.Count(out, "\n") != 0 {
		t.Fatalf("stdout is not one line:\n%s", out)
	}
	var rep struct {
		Queries []map[string]any `json:"queries"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("stdout %q is not the report object: %v", out, err)
	}
	if len(rep.Queries) != 1 {
		t.Fatalf("%d queries, want 1 (q0)", len(rep.Queries))
	}
	q := rep.Queries[0]
	if q["query"] != "q0" || q["state_backend"] != "lsm" {
		t.Errorf("query %v, state_backend %v; want q0, lsm (the default)", q["query"], q["state_backend"])
	}
	if q["events"] != json.Number("200000") {
		t.Errorf("events %v, want 200000", q["events"])
	}
	for _, f := range nexmarkFields[3:] {
		n, ok := q[f].(json.Number)
		if !ok {
			t.Errorf("%s = %v, want a number", f, q[f])
			continue
		}
		if v, err := n.Float64(); err != nil || !(v > 0) {
			t.Errorf("%s = %v, want > 0", f, n)
		}
	}
	if q["flink_events_per_core_second"] != json.Number("379000") {
		t.Errorf("flink_events_per_core_second %v, want 379000 (GUIDE_V2.md: 2.65 M/s on 7 cores)", q["flink_events_per_core_second"])
	}
	// The contract's fields come first, in its order.
	prev := strings.Index(out, `"queries":[{`)
	if prev != 1 {
		t.Fatalf("stdout does not start with {\"queries\":[{ :\n%s", out)
	}
	for _, f := range nexmarkFields {
		i := strings.Index(out, `"`+f+`":`)
		if i <= prev {
			t.Errorf("field %q is missing or out of order in %s", f, out)
		}
		prev = i
	}
}

// A bad flag is a usage error naming it.
func TestNexmarkBenchUsage(t *testing.T) {
	for _, c := range []struct{ args, want []string }{
		{[]string{"--query", "q6"}, []string{"--query", `unknown Nexmark query "q6"`}},
		{[]string{"--events", "0"}, []string{"--events 0"}},
		{[]string{"--state-backend", "rocks"}, []string{`--state-backend "rocks"`}},
	} {
		r := runWeir(t, time.Minute, append([]string{"bench", "nexmark"}, c.args...)...)
		if r.code != 2 {
			t.Errorf("%v: exit %d, want 2; stderr:\n%s", c.args, r.code, r.stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args, w, r.stderr)
			}
		}
	}
}
