package postgrescdc

import (
	"os"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"
)

// metricNames are the series the source exports.
var metricNames = []string{
	"weir_postgrescdc_replication_lag_bytes",
	"weir_postgrescdc_replication_lag_seconds",
	"weir_postgrescdc_retained_wal_bytes",
	"weir_postgrescdc_snapshot_chunks_total",
	"weir_postgrescdc_snapshot_rows_total",
}

// checkMetrics checks, after a run, that every metric is there with its
// slot label, and that the snapshot and the slot's WAL were measured.
func checkMetrics(t *testing.T, reg *prometheus.Registry) {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != 1 || m.GetLabel()[0].GetName() != "slot" {
				t.Errorf("%s: labels %v, want slot", f.GetName(), m.GetLabel())
			}
			switch {
			case m.Gauge != nil:
				got[f.GetName()] = m.GetGauge().GetValue()
			case m.Counter != nil:
				got[f.GetName()] = m.GetCounter().GetValue()
			}
		}
	}
	for _, n := range metricNames {
		if _, ok := got[n]; !ok {
			t.Errorf("no metric %s", n)
		}
	}
	if got["weir_postgrescdc_snapshot_rows_total"] == 0 || got["weir_postgrescdc_retained_wal_bytes"] <= 0 {
		t.Errorf("metrics %v: want snapshot rows and retained WAL measured", got)
	}
}

// TestAlertRules: the rules of deploy/prometheus/weir-cdc-alerts.yml name
// only metrics the source exports.
func TestAlertRules(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/prometheus/weir-cdc-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, n := range metricNames {
		known[n] = true
	}
	n := 0
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			n++
			for _, name := range regexp.MustCompile(`weir_[a-z_]+`).FindAllString(r.Expr, -1) {
				if !known[name] {
					t.Errorf("alert %s: %s is not a metric of the source", r.Alert, name)
				}
			}
		}
	}
	if n < 2 {
		t.Errorf("%d rules, want the retained WAL and lag alerts", n)
	}
}
