package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/weirstream/weir/internal/testutil"
)

// The monitoring that operators already run: deploy/prometheus (a scrape
// config and alerting rules) and deploy/grafana (a dashboard) must name
// only metrics weir exports, promtool must accept them, and a real
// Prometheus server scraping a JobManager and its TaskManagers must find
// the job's series under their labels.

const (
	alertsFile     = "../../deploy/prometheus/weir-alerts.yml"
	alertsTestFile = "../../deploy/prometheus/weir-alerts.test.yml"
	promConfig     = "../../deploy/prometheus/prometheus.yml"
	dashboardFile  = "../../deploy/grafana/weir-dashboard.json"
)

var (
	// weirNameRE finds metric names in PromQL and in Go string literals.
	weirNameRE = regexp.MustCompile(`\bweir_[A-Za-z0-9_]+`)
	// In internal/metrics/names.go: j("name", …), t("name", …),
	// t(NameX, …), jobPrefix+"name"; NameX = "name".
	jobDescRE   = regexp.MustCompile(`\bj\("(\w+)"`)
	taskDescRE  = regexp.MustCompile(`\bt\("(\w+)"`)
	taskConstRE = regexp.MustCompile(`\bt\((Name\w+),`)
	jobConcatRE = regexp.MustCompile(`jobPrefix\+"(\w+)"`)
	nameConstRE = regexp.MustCompile(`\b(Name\w+)\s*=\s*"(\w+)"`)
	tmConcatRE  = regexp.MustCompile(`"(weir_\w+_)"\+metrics\.(Name\w+)`)
	goLiteralRE = regexp.MustCompile(`"(weir_\w+[A-Za-z0-9])"`)
)

// exportedMetricNames lists the metric names weir's processes export, read
// from the source that declares them: the JobManager's job and task metrics
// (internal/metrics) and the names internal/cluster declares (TaskManager
// task and traffic metrics, JobManager leadership).
func exportedMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	src, err := os.ReadFile("../../internal/metrics/names.go")
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, m := range nameConstRE.FindAllStringSubmatch(string(src), -1) {
		consts[m[1]] = m[2]
	}
	for _, m := range jobDescRE.FindAllStringSubmatch(string(src), -1) {
		names["weir_jobmanager_job_"+m[1]] = true
	}
	for _, m := range jobConcatRE.FindAllStringSubmatch(string(src), -1) {
		names["weir_jobmanager_job_"+m[1]] = true
	}
	for _, m := range taskDescRE.FindAllStringSubmatch(string(src), -1) {
		names["weir_taskmanager_job_task_"+m[1]] = true
	}
	for _, m := range taskConstRE.FindAllStringSubmatch(string(src), -1) {
		v, ok := consts[m[1]]
		if !ok {
			t.Fatalf("names.go: t(%s, …) but no constant %s", m[1], m[1])
		}
		names["weir_taskmanager_job_task_"+v] = true
	}
	files, err := filepath.Glob("../../internal/cluster/*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range goLiteralRE.FindAllStringSubmatch(string(src), -1) {
			names[m[1]] = true
		}
		for _, m := range tmConcatRE.FindAllStringSubmatch(string(src), -1) {
			v, ok := consts[m[2]]
			if !ok {
				t.Fatalf("%s: metrics.%s is not a constant of internal/metrics/names.go", f, m[2])
			}
			names[m[1]+v] = true
		}
	}
	// The metrics this file's dashboard and alerts rely on; if the source
	// scan stops finding them, the scan (or a rename) is wrong.
	for _, n := range []string{
		"weir_jobmanager_job_numberOfCompletedCheckpoints", "weir_jobmanager_job_numberOfFailedCheckpoints",
		"weir_jobmanager_job_checkpointStorageFailing", "weir_jobmanager_job_numberOfFailedCheckpointsByCause",
		"weir_jobmanager_job_lastCheckpointDuration", "weir_jobmanager_job_numRestarts",
		"weir_taskmanager_job_task_isBackPressured", "weir_taskmanager_job_task_creditsAvailable",
		"weir_taskmanager_job_task_numRecordsInPerSecond", "weir_taskmanager_job_task_watermarkLag",
		"weir_jobmanager_numberOfLeaderChanges", "weir_jobmanager_isLeader", "weir_taskmanager_numBytesOutRemote",
	} {
		if !names[n] {
			t.Fatalf("the source scan did not find %s; found:\n%s", n, strings.Join(sortedKeys(names), "\n"))
		}
	}
	return names
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// checkExprNames fails the test for every weir_ name in expr that weir
// does not export.
func checkExprNames(t *testing.T, where, expr string, known map[string]bool) {
	t.Helper()
	names := weirNameRE.FindAllString(expr, -1)
	if len(names) == 0 {
		t.Errorf("%s: expression names no weir metric: %s", where, expr)
	}
	for _, n := range names {
		if !known[n] {
			t.Errorf("%s: %s is not a metric weir exports (expression %s)", where, n, expr)
		}
	}
}

type grafanaPanel struct {
	ID      int            `json:"id"`
	Type    string         `json:"type"`
	Title   string         `json:"title"`
	Panels  []grafanaPanel `json:"panels"`
	Targets []struct {
		Expr       string `json:"expr"`
		Datasource struct {
			Type string `json:"type"`
			UID  string `json:"uid"`
		} `json:"datasource"`
	} `json:"targets"`
}

// TestGrafanaDashboard: deploy/grafana/weir-dashboard.json is a Grafana
// dashboard (schemaVersion ≥ 38) with a Prometheus data source variable
// and a job_name variable, whose every panel queries only metrics weir
// exports, through the data source variable.
func TestGrafanaDashboard(t *testing.T) {
	known := exportedMetricNames(t)
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		SchemaVersion int            `json:"schemaVersion"`
		UID           string         `json:"uid"`
		Title         string         `json:"title"`
		Panels        []grafanaPanel `json:"panels"`
		Templating    struct {
			List []struct {
				Name       string          `json:"name"`
				Type       string          `json:"type"`
				Query      json.RawMessage `json:"query"`
				Definition string          `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.SchemaVersion < 38 {
		t.Errorf("schemaVersion %d, want ≥ 38", d.SchemaVersion)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: both must be set", d.UID, d.Title)
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		switch v.Name {
		case "datasource":
			var q string
			if v.Type != "datasource" || json.Unmarshal(v.Query, &q) != nil || q != "prometheus" {
				t.Errorf("variable datasource: type %q query %s, want a datasource variable of type prometheus", v.Type, v.Query)
			}
		case "job_name":
			if v.Type != "query" || !strings.HasPrefix(v.Definition, "label_values(") || !strings.Contains(string(v.Query), "job_name)") {
				t.Errorf("variable job_name: type %q definition %q, want label_values(…, job_name)", v.Type, v.Definition)
			}
			checkExprNames(t, "variable job_name", v.Definition, known)
		}
		vars[v.Name] = true
	}
	if !vars["datasource"] || !vars["job_name"] {
		t.Errorf("variables %v, want datasource and job_name", sortedKeys(vars))
	}
	var panels []grafanaPanel
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			panels = append(panels, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	ids := map[int]bool{}
	queried := map[string]bool{}
	for _, p := range panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: datasource uid %q, want ${datasource}", p.Title, tg.Datasource.UID)
			}
			checkExprNames(t, fmt.Sprintf("panel %q", p.Title), tg.Expr, known)
			for _, n := range weirNameRE.FindAllString(tg.Expr, -1) {
				queried[n] = true
			}
		}
	}
	// The panels the seeds' operators look at first.
	for _, n := range []string{
		"weir_jobmanager_job_numberOfCompletedCheckpoints", "weir_jobmanager_job_numberOfFailedCheckpoints",
		"weir_jobmanager_job_lastCheckpointDuration", "weir_jobmanager_job_lastCheckpointSize",
		"weir_jobmanager_job_checkpointStorageFailing", "weir_jobmanager_job_numRestarts",
		"weir_taskmanager_job_task_numRecordsInPerSecond", "weir_taskmanager_job_task_numRecordsOutPerSecond",
		"weir_taskmanager_job_task_isBackPressured", "weir_taskmanager_job_task_creditsAvailable",
		"weir_taskmanager_job_task_watermarkLag", "weir_jobmanager_isLeader",
	} {
		if !queried[n] {
			t.Errorf("no panel shows %s", n)
		}
	}
}

// TestAlertRules: every rule of deploy/prometheus/weir-alerts.yml names
// only metrics weir exports and tells the operator what happened and what
// to do; and the seeds' alerts are all there.
func TestAlertRules(t *testing.T) {
	known := exportedMetricNames(t)
	raw, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	alerts := map[string]bool{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s: a rule without alert (recording rules belong elsewhere)", g.Name)
				continue
			}
			alerts[r.Alert] = true
			checkExprNames(t, "alert "+r.Alert, r.Expr, known)
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("alert %s: severity %q, want warning or critical", r.Alert, s)
			}
			if r.Annotations["summary"] == "" || len(r.Annotations["description"]) < 100 {
				t.Errorf("alert %s: needs a summary and a description that tells the operator what to do", r.Alert)
			}
		}
	}
	for _, a := range []string{
		"WeirCheckpointsFailing", "WeirCheckpointStorageFailing", "WeirCheckpointDurationHigh",
		"WeirCheckpointDurationGrowing", "WeirNoCompletedCheckpoint", "WeirBackPressured",
		"WeirZeroCredits", "WeirJobRestarting", "WeirJobManagerLeaderChanged",
	} {
		if !alerts[a] {
			t.Errorf("no alert %s", a)
		}
	}
}

// TestPromtoolChecks runs promtool (Debian's prometheus package,
// .ci/prometheus.sh) on the alerting rules, their unit tests and the
// example configuration.
func TestPromtoolChecks(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (Debian: apt-get install prometheus, or .ci/prometheus.sh)")
	}
	for _, args := range [][]string{{"check", "rules", alertsFile}, {"check", "config", promConfig}, {"test", "rules", alertsTestFile}} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestPrometheusScrapesCluster: a real Prometheus server scrapes a
// JobManager's /metrics and two TaskManagers' --metrics-address every
// second while the demo runs, and its HTTP API then answers the queries
// the dashboard and the alerts make, with the job's labels.
func TestPrometheusScrapesCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of three processes and a Prometheus server for about 15 s")
	}
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (Debian: apt-get install prometheus, or .ci/prometheus.sh)")
	}
	start := time.Now()

	// The JobManager, then two TaskManagers serving /metrics on free
	// addresses (startE2ECluster's own turn theirs off). The JobManager's
	// task series change once per heartbeat, whose answer carries the task
	// reports: at the default 10 s its numRecordsInPerSecond would see one
	// report of the 15 s job and stay 0.
	c := startE2ECluster(t, 0, 0, "heartbeat.interval=1s")
	var tmMetrics []string
	for i := range 2 {
		id, addr := fmt.Sprintf("tm-%d", i), testutil.FreeAddr(t)
		c.tmArgs[id] = []string{"taskmanager", "--jobmanager", c.rpc, "--slots", "2", "--resource-id", id, "--metrics-address", addr, "-v"}
		c.startTM(id)
		tmMetrics = append(tmMetrics, addr)
	}
	c.waitTaskManagers(2)

	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - %q
scrape_configs:
  - job_name: weir-jobmanager
    static_configs:
      - targets: [%q]
  - job_name: weir-taskmanager
    static_configs:
      - targets: [%q, %q]
`, mustAbs(t, alertsFile), c.rest, tmMetrics[0], tmMetrics[1])
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	web := testutil.FreeAddr(t)
	cmd := exec.Command(prom, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+web, "--log.level=warn")
	var promLog lockedBuffer
	cmd.Stdout, cmd.Stderr = &promLog, &promLog
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	base := "http://" + web
	waitUntil(t, 30*time.Second, "Prometheus ready", func() bool {
		select {
		case <-exited:
			t.Fatalf("prometheus exited: %s", promLog.String())
		default:
		}
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, func() string { return promLog.String() })

	// The demo: 300,000 events at 20,000 a second, about 15 s.
	args, _ := c.demoArgs(300_000, 20_000, 2)
	client := startWeir(t, c.lifetime, args...)

	queries := []string{
		`weir_jobmanager_job_numberOfCompletedCheckpoints{job_name="demo"} > 0`,
		`weir_jobmanager_job_lastCheckpointDuration{job_name="demo"}`,
		`weir_jobmanager_job_checkpointStorageFailing{job_name="demo"} == 0`,
		`weir_taskmanager_job_task_isBackPressured{job_name="demo", job="weir-jobmanager"}`,
		`weir_taskmanager_job_task_isBackPressured{job_name="demo", job="weir-taskmanager"}`,
		`weir_taskmanager_job_task_creditsAvailable{job_name="demo", job="weir-taskmanager"}`,
		`weir_taskmanager_job_task_numRecordsInPerSecond{job_name="demo"} > 0`,
		`rate(weir_taskmanager_job_task_numRecordsIn{job_name="demo", job="weir-taskmanager"}[5s]) > 0`,
	}
	found := map[string][]promSample{}
	waitUntil(t, 60*time.Second, "Prometheus has the demo's series", func() bool {
		for _, q := range queries {
			if len(found[q]) > 0 {
				continue
			}
			found[q] = promQuery(t, base, q)
		}
		for _, q := range queries {
			if len(found[q]) == 0 {
				return false
			}
		}
		return true
	}, func() string {
		var b strings.Builder
		for _, q := range queries {
			fmt.Fprintf(&b, "%s: %d series\n", q, len(found[q]))
		}
		for _, q := range []string{`max_over_time(weir_taskmanager_job_task_numRecordsInPerSecond[1m])`, `max_over_time(weir_taskmanager_job_task_numRecordsIn[1m])`} {
			resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(q))
			if err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				fmt.Fprintf(&b, "%s: %s\n", q, body)
			}
		}
		return b.String() + promTargets(base) + c.logs()
	})
	for _, q := range queries {
		for _, s := range found[q] {
			if s.Metric["job_name"] != "demo" {
				t.Errorf("%s: series %v has no job_name=demo", q, s.Metric)
			}
			if strings.HasPrefix(s.Metric["__name__"], "weir_jobmanager_job_") && s.Metric["job_id"] == "" {
				t.Errorf("%s: series %v has no job_id", q, s.Metric)
			}
			if strings.Contains(q, "isBackPressured") && (s.Metric["task_id"] == "" || s.Metric["subtask_index"] == "") {
				t.Errorf("%s: series %v has no task_id / subtask_index", q, s.Metric)
			}
		}
	}
	t.Logf("%s: %d series; %s: %d series", queries[0], len(found[queries[0]]), queries[6], len(found[queries[6]]))

	// The alerting rules load and evaluate on the live series (none is
	// expected to fire; the rules must simply be healthy).
	waitUntil(t, 10*time.Second, "the alerting rules evaluated", func() bool {
		groups := promRules(t, base)
		if len(groups) == 0 {
			return false
		}
		for _, r := range groups {
			if r.Health != "ok" {
				if r.Health == "err" {
					t.Fatalf("rule %s: %s", r.Name, r.LastError)
				}
				return false
			}
		}
		return true
	}, func() string { return promLog.String() })

	// Every weir_ metric Prometheus saw is one the source scan knows: the
	// dashboard and alert tests check against a complete list.
	known := exportedMetricNames(t)
	for _, n := range promLabelValues(t, base, "__name__") {
		if strings.HasPrefix(n, "weir_") && !known[n] {
			t.Errorf("Prometheus scraped %s, which exportedMetricNames does not list: extend its scan", n)
		}
	}

	if res := client.wait(); res.code != 0 {
		t.Fatalf("weir run exited %d; stderr:\n%s\n%s", res.code, tail(res.stderr, 3000), c.logs())
	}
	t.Logf("cluster, demo and Prometheus: %s", time.Since(start).Round(100*time.Millisecond))
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// waitUntil polls cond every 200 ms until it holds, or fails the test
// after timeout with what and diag().
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool, diag func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s\n%s", what, timeout, diag())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type promSample struct {
	Metric map[string]string `json:"metric"`
}

// promAPI GETs a Prometheus HTTP API path and decodes its data.
func promAPI(t *testing.T, base, path string, data any) {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Status != "success" {
		t.Fatalf("GET %s: %d %s (%v)", path, resp.StatusCode, body, err)
	}
	if err := json.Unmarshal(r.Data, data); err != nil {
		t.Fatalf("GET %s: data %s: %v", path, r.Data, err)
	}
}

// promQuery runs an instant query and returns the series of its vector.
func promQuery(t *testing.T, base, q string) []promSample {
	t.Helper()
	var d struct {
		ResultType string       `json:"resultType"`
		Result     []promSample `json:"result"`
	}
	promAPI(t, base, "/api/v1/query?query="+url.QueryEscape(q), &d)
	if d.ResultType != "vector" {
		t.Fatalf("query %s: result type %s", q, d.ResultType)
	}
	return d.Result
}

func promLabelValues(t *testing.T, base, label string) []string {
	t.Helper()
	var vs []string
	promAPI(t, base, "/api/v1/label/"+label+"/values", &vs)
	return vs
}

type promRule struct {
	Name      string `json:"name"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
}

// promRules lists the alerting rules Prometheus loaded, with their health.
func promRules(t *testing.T, base string) []promRule {
	t.Helper()
	var d struct {
		Groups []struct {
			Rules []promRule `json:"rules"`
		} `json:"groups"`
	}
	promAPI(t, base, "/api/v1/rules?type=alert", &d)
	var out []promRule
	for _, g := range d.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// promTargets describes the scrape targets' health, for a failure message.
func promTargets(base string) string {
	resp, err := http.Get(base + "/api/v1/targets")
	if err != nil {
		return "targets: " + err.Error()
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			ActiveTargets []struct {
				ScrapeURL string `json:"scrapeUrl"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return "targets: " + err.Error()
	}
	var b strings.Builder
	for _, tg := range r.Data.ActiveTargets {
		fmt.Fprintf(&b, "target %s: %s %s\n", tg.ScrapeURL, tg.Health, tg.LastError)
	}
	return b.String()
}

// lockedBuffer is a bytes.Buffer a process writes while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
