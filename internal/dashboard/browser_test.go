package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/dashboard"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/rest"
	"github.com/weirstream/weir/internal/runtime"
)

// chromium is Debian's browser, which .ci/chromium.sh installs.
const chromium = "/usr/bin/chromium"

// demoJob is a job as the REST API sees it; its id is its name.
type demoJob struct {
	name    string
	status  *jobstatus.JobStatus
	control jobstatus.Control
	cfg     *config.Config
}

func (j demoJob) ID() string                   { return j.name }
func (j demoJob) Name() string                 { return j.name }
func (j demoJob) Status() *jobstatus.JobStatus { return j.status }
func (j demoJob) Control() jobstatus.Control   { return j.control }
func (j demoJob) Config() *config.Config       { return j.cfg }

// artifacts is the folder the screenshots go to: $WEIR_ARTIFACTS, or a
// temporary one.
func artifacts(t *testing.T) string {
	dir := os.Getenv("WEIR_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	dir = filepath.Join(dir, "dashboard")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The dashboard in a real browser over a running demo job: the overview
// lists the job, the job page draws its two vertices with their rates,
// the checkpoint history shows completed checkpoints, Trigger checkpoint
// produces a new one that completes (the REST API confirms it), a
// history row opens the per-subtask details, and a 400 px window needs
// no sideways scrolling of the page. Screenshots go to WEIR_ARTIFACTS (or
// a temporary folder; the log names it); WEIR_UPDATE_SCREENSHOT=1 also
// refreshes docs/dashboard.png.
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the browser test runs chromium and a 15 s demo job")
	}
	if _, err := exec.LookPath(chromium); err != nil {
		t.Skipf("%s is not installed (bash .ci/chromium.sh installs it): %v", chromium, err)
	}
	const p = 2
	dir := t.TempDir()
	cfg := weir.NewConfig()
	for key, v := range map[string]string{
		config.ParallelismDefault:    strconv.Itoa(p),
		config.CheckpointsDir:        filepath.Join(dir, "state"),
		config.CheckpointingInterval: "1s",
	} {
		if err := cfg.Set(key, v); err != nil {
			t.Fatal(err)
		}
	}
	env := weir.NewEnv(weir.WithConfig(cfg))
	// 15 s of events; the test cancels the job once it has looked.
	demo.Build(env, demo.Options{Events: 300_000, Keys: 53, Rate: 20_000, Out: filepath.Join(dir, "out")})
	j := demoJob{name: "demo", status: hooks.Plan(env).Status, control: hooks.Plan(env).Control, cfg: hooks.Config(env.Config())}
	reg := prometheus.NewRegistry()
	m, err := metrics.NewJob(reg, "demo", "demo", j.status, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unregister()
	srv := httptest.NewServer(rest.NewHandler(rest.Config{
		Jobs:    func() []rest.Job { return []rest.Job{j} },
		Metrics: metrics.Handler(reg, nil),
		UI:      dashboard.Handler(),
	}))
	defer srv.Close()

	jobCtx, cancelJob := context.WithCancel(context.Background())
	defer cancelJob()
	done := make(chan error, 1)
	go func() { done <- env.Execute(jobCtx, "demo") }()
	defer func() {
		cancelJob()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("demo job: %v", err)
		}
	}()

	out := artifacts(t)
	t.Logf("screenshots: %s", out)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()

	// Every uncaught exception and console error in the page fails the test.
	var mu sync.Mutex
	var pageErrors []string
	err = chromedp.Listen(browser, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *cdpruntime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			pageErrors = append(pageErrors, fmt.Sprintf("%s (%s:%d:%d)", msg, d.URL, d.LineNumber+1, d.ColumnNumber+1))
		case *cdpruntime.EventConsoleAPICalled:
			if ev.Type == cdpruntime.ConsoleAPICalledTypeError {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				pageErrors = append(pageErrors, fmt.Sprintf("console.error %v", args))
			}
		}
	})
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range pageErrors {
			t.Errorf("page error: %s", e)
		}
	}()

	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(browser, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	shot := func(name string) []byte {
		t.Helper()
		png, err := chromedp.Run(browser, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(out, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
		return png
	}
	// until evaluates a JavaScript condition every 100 ms until it holds.
	until := func(what, js string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			ok, err := chromedp.Run(browser, chromedp.Evaluate[bool](js))
			if err != nil {
				t.Fatalf("evaluate %s: %v", what, err)
			}
			if ok {
				return
			}
			if time.Now().After(deadline) {
				text, _ := chromedp.Run(browser, chromedp.Text(chromedp.CSS("body")))
				t.Fatalf("timed out waiting for %s; the page shows:\n%s", what, text)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// Overview: the job is listed as running.
	run("open the overview", chromedp.Navigate(srv.URL+"/"))
	until("the overview to list the running job", `!!document.querySelector('#jobs tr[data-job="demo"] .state-running')`)
	shot("overview.png")

	// The job graph: both vertices as boxes, rates once two samples exist.
	run("open the job", chromedp.Navigate(srv.URL+"/#/jobs/demo"))
	until("the graph's two vertices, joined by an arrow", `document.querySelectorAll('#graph g[data-vertex]').length === 2 && document.querySelectorAll('#graph path.edge').length === 1`)
	until("a records rate on the source", `/in|out/.test(document.querySelector('#graph g[data-vertex="0"] .rates').textContent) && !/out —/.test(document.querySelector('#graph g[data-vertex="0"] .rates').textContent)`)
	until("back pressure colours", `[...document.querySelectorAll('#graph g[data-vertex]')].every(g => ["ok","low","high"].includes(g.dataset.backpressure))`)
	graphPNG := shot("job-graph.png")
	run("click the aggregate vertex", chromedp.Click(chromedp.CSS(`#graph g[data-vertex="1"] rect`)))
	until("its subtasks with back pressure and watermarks", fmt.Sprintf(`location.hash.endsWith('/vertices/1') && document.querySelectorAll('#subtasks tr[data-subtask]').length === %d
		&& [...document.querySelectorAll('#subtasks tr[data-subtask]')].every(r => /ok|low|high/.test(r.cells[1].textContent) && /Watermark|:/.test(r.cells[3].textContent))`, p))
	shot("vertex.png")

	// Checkpoints: at least one completed; trigger one more.
	run("open the checkpoints", chromedp.Navigate(srv.URL+"/#/jobs/demo/checkpoints"))
	until("a completed checkpoint in the history", `!!document.querySelector('#history tr[data-status="COMPLETED"]')`)
	before, err := chromedp.Run(browser, chromedp.Evaluate[int](`Math.max(...[...document.querySelectorAll('#history tr[data-checkpoint-id]')].map(r => +r.dataset.checkpointId))`))
	if err != nil {
		t.Fatalf("read the newest checkpoint id: %v", err)
	}
	run("click Trigger checkpoint", chromedp.Click(chromedp.CSS("#trigger-checkpoint")))
	until("the trigger's request id", `!!document.querySelector('#action-result [data-request-id]')`)
	rid, err := chromedp.Run(browser, chromedp.Evaluate[string](`document.querySelector('#action-result [data-request-id]').dataset.requestId`))
	if err != nil {
		t.Fatalf("read the request id: %v", err)
	}
	id, err := strconv.Atoi(rid)
	if err != nil || id <= before {
		t.Fatalf("triggered checkpoint %q, want an id above %d", rid, before)
	}
	waitCompleted(t, srv.URL+"/jobs/demo/checkpoints/"+rid)
	until("the dashboard to report checkpoint "+rid+" completed", `!!document.querySelector('#action-result [data-outcome="completed"]')`)
	until("checkpoint "+rid+" completed in the history", fmt.Sprintf(`!!document.querySelector('#history tr[data-checkpoint-id="%d"][data-status="COMPLETED"]')`, id))

	// A history row opens the checkpoint's per-vertex, per-subtask details.
	run("click checkpoint "+rid, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#history tr[data-checkpoint-id="%d"] td:nth-child(3)`, id))))
	until("the details of checkpoint "+rid, fmt.Sprintf(`location.hash.endsWith('/checkpoints/%d') && document.querySelectorAll('#checkpoint-details [data-subtasks-vertex] tbody tr').length === %d`, id, 2*p))
	shot("checkpoints.png")

	// A narrow window: everything fits its width, tables scroll inside.
	run("narrow the window", chromedp.EmulateViewport(400, 800, chromedp.EmulateMobile, chromedp.EmulateTouch), chromedp.Navigate(srv.URL+"/#/jobs/demo"))
	until("the graph in a narrow window", `document.querySelectorAll('#graph g[data-vertex]').length === 2`)
	// Nothing sticks out of the window: not the page, not a card, button
	// or scroll container (tables and the graph scroll inside those).
	overflow, err := chromedp.Run(browser, chromedp.Evaluate[int](`Math.ceil(Math.max(document.documentElement.scrollWidth,
		...[...document.querySelectorAll('.card, .actions button, .tabs, .scroll, h1')].map(e => e.getBoundingClientRect().right)) - window.innerWidth)`))
	if err != nil {
		t.Fatalf("measure the page width: %v", err)
	}
	if overflow > 0 {
		t.Errorf("at 400 px the page is %d px wider than the window", overflow)
	}
	shot("narrow-400px.png")
	// A table scrolled sideways stays scrolled through the next refresh.
	run("scroll the vertex table", chromedp.Evaluate[chromedp.Void](`(() => {
		const s = document.querySelector('#vertices').parentElement; s.scrollLeft = 120;
		window.beforeRefresh = document.getElementById('status').textContent;
		window.scrolledRows = document.querySelector('#vertices tbody tr'); })()`))
	until("a refresh that keeps the scroll", `document.getElementById('status').textContent !== window.beforeRefresh
		&& document.querySelector('#vertices tbody tr') !== window.scrolledRows && document.querySelector('#vertices').parentElement.scrollLeft >= 100`)

	run("widen the window", chromedp.EmulateViewport(1280, 900))
	clusterViews(t, browser, run, until, shot)

	if os.Getenv("WEIR_UPDATE_SCREENSHOT") == "1" {
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "dashboard.png"), graphPNG, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("updated docs/dashboard.png")
	}
}

// waitCompleted polls a checkpoint trigger's status until it completed.
func waitCompleted(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		var st rest.TriggerStatus
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
		}
		if st.Status.ID != "IN_PROGRESS" {
			if st.Status.ID != "COMPLETED" || st.Operation == nil || st.Operation.FailureCause != "" {
				t.Fatalf("GET %s: %+v %+v, want COMPLETED without a failure cause", url, st.Status, st.Operation)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("checkpoint at %s still in progress after 30 s", url)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// clusterViews checks what a JobManager's API adds, on a fake one that
// wants a token and refuses every write (403): the page asks for the
// token once; the HA leader and the TaskManagers show; a
// job named with markup shows as text; Trigger checkpoint, refused, is
// disabled with the API's reason.
func clusterViews(t *testing.T, browser context.Context, run func(string, ...chromedp.Action[chromedp.Void]), until func(string, string), shot func(string) []byte) {
	const evil = `<img src=x onerror="window.pwned=1">`
	st := &jobstatus.JobStatus{} // not running: its commands are refused
	// Two evaluations of the autoscaler: one that kept the job as it was,
	// one that rescaled a vertex, its reason holding markup.
	rec := jobstatus.RecorderOf(st)
	rec.SetAutoscaling()
	rec.AutoscalerDecided(jobstatus.AutoscalerDecision{At: time.Now().Add(-time.Minute), Reason: "every vertex within its utilization band", Vertices: []jobstatus.AutoscalerVertex{
		{ID: "src", From: 2, To: 2, In: 1000, Out: 1000, Busy: 0.5, Lag: -1, TruePerSubtask: 1000, Target: 1000, Utilization: 0.5, Why: "utilization 0.50 within 0.40–1.00"},
	}})
	rec.AutoscalerDecided(jobstatus.AutoscalerDecision{At: time.Now(), Rescale: true, Vertices: []jobstatus.AutoscalerVertex{
		{ID: "src", From: 2, To: 2, In: 1000, Out: 1000, Busy: 0.5, Lag: 600000, TruePerSubtask: 1000, Target: 3000, Utilization: 1.5, Why: "pinned " + evil},
		{ID: "sum", From: 2, To: 4, In: 1000, Out: 10, Busy: 0.9, Backpressure: 0.01, Lag: -1, TruePerSubtask: 555, Target: 3000, Utilization: 2.7, Why: "utilization 2.70 outside 0.40–1.00"},
	}})
	st.AutoscalerRescales.Store(1)
	// A second job, in reactive mode: its steps instead of evaluations.
	rst := &jobstatus.JobStatus{}
	rrec := jobstatus.RecorderOf(rst)
	rrec.SetReactive()
	rrec.ReactiveDecided(jobstatus.ReactiveDecision{At: time.Now().Add(-time.Second), Kind: "scale-down", From: 4, To: 2, Parallelism: 4, Slots: 2, Min: 1, Max: 128, Why: "2 slots, fewer than the 4 the job runs on"})
	rrec.ReactiveDecided(jobstatus.ReactiveDecision{At: time.Now(), Kind: "running", Parallelism: 2, Slots: 2, Min: 1, Max: 128, Why: "rescaled from 4 to 2"})
	rst.ReactiveRescales.Store(1)
	api := rest.NewHandler(rest.Config{
		Jobs: func() []rest.Job {
			return []rest.Job{demoJob{name: evil, status: st, control: runtime.NewJobControl(st), cfg: config.New()},
				demoJob{name: "reactive", status: rst, control: runtime.NewJobControl(rst), cfg: config.New()}}
		},
		TaskManagers: func() []rest.TaskManagerInfo {
			return []rest.TaskManagerInfo{{ID: "tm-3f9c1a", Path: "127.0.0.1:41234", DataPort: "127.0.0.1:39001", MetricsAddr: "127.0.0.1:9249",
				Registered: time.Now().UnixMilli(), SlotsNumber: 2, FreeSlots: 1}}
		},
		Leadership: func() rest.LeaderStatus {
			return rest.LeaderStatus{Leader: true, ID: "jm-a", RESTAddress: "127.0.0.1:8081", Term: 42, Changes: 3}
		},
		UI: dashboard.Handler(),
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The page and its assets are open; the API wants a token.
		if r.URL.Path != "/" && !strings.HasPrefix(r.URL.Path, dashboard.Prefix) && r.Header.Get("Authorization") != "Bearer s3cret" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"errors":["missing or wrong token"]}` + "\n"))
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"errors":["this REST API is read-only"]}` + "\n"))
			return
		}
		api.ServeHTTP(w, r)
	}))
	defer srv.Close()

	run("open a JobManager's overview", chromedp.Navigate(srv.URL+"/"))
	until("the dashboard to ask for the token", `!!document.querySelector('#token-form input')`)
	run("give the token", chromedp.SendKeys(chromedp.CSS("#token-form input"), "s3cret"), chromedp.Click(chromedp.CSS("#token-form button")))
	until("the HA leader and the TaskManager count", `!!document.querySelector('[data-leader="true"]') && /jm-a/.test(document.body.textContent) && document.querySelector('.cards .value').textContent === "1"`)
	until("the job named with markup, as text", `document.querySelector('#jobs tr[data-job] a').textContent === `+"`"+evil+"`"+` && !document.querySelector('#jobs img') && window.pwned === undefined`)
	shot("overview-cluster.png")

	run("open the TaskManagers", chromedp.Navigate(srv.URL+"/#/taskmanagers"))
	until("the TaskManager", `!!document.querySelector('#taskmanagers tr[data-taskmanager="tm-3f9c1a"]')`)
	shot("taskmanagers.png")

	run("open the job", chromedp.Navigate(srv.URL+"/#/jobs/"+url.PathEscape(evil)))
	until("the job page", `document.querySelector('h1').textContent === `+"`"+evil+"`")
	run("click Trigger checkpoint", chromedp.Click(chromedp.CSS("#trigger-checkpoint")))
	until("Trigger checkpoint disabled with the API's reason", `document.querySelector('#trigger-checkpoint').disabled && /read-only/.test(document.querySelector('#trigger-checkpoint').title) && /read-only/.test(document.querySelector('#action-result').textContent)`)
	until("the other buttons still enabled", `!document.querySelector('#stop').disabled && window.pwned === undefined && !document.querySelector('img')`)

	// The autoscaler's decisions, newest first, with their inputs.
	run("open the autoscaler tab", chromedp.Navigate(srv.URL+"/#/jobs/"+url.PathEscape(evil)+"/autoscaler"))
	until("both decisions, the rescale first", `document.querySelectorAll('.decision').length === 2 && document.querySelector('.decision').dataset.rescale === "true"`)
	until("the rescaled vertex with its inputs", `(() => { const r = document.querySelector('.decision tr[data-vertex="sum"]');
		return r && r.classList.contains('changed') && r.cells[1].textContent === "2 → 4" && r.cells[9].textContent === "2.70" && /outside/.test(r.cells[10].textContent); })()`)
	until("the source's lag, and the reason with markup as text", `document.querySelector('.decision tr[data-vertex="src"]').cells[6].textContent === "600,000"
		&& document.querySelector('.decision tr[data-vertex="src"] td.why').textContent === "pinned "+`+"`"+evil+"`"+` && window.pwned === undefined && !document.querySelector('img')`)
	shot("autoscaler.png")

	run("open the reactive job's autoscaler tab", chromedp.Navigate(srv.URL+"/#/jobs/reactive/autoscaler"))
	until("its steps, newest first", `document.querySelectorAll('#reactive tbody tr').length === 2
		&& document.querySelector('#reactive tbody tr').dataset.kind === "running"
		&& document.querySelector('#reactive tr[data-kind="scale-down"]').cells[2].textContent === "4 → 2"`)
}
