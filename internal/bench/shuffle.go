package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/cobra"
)

// The modes of bench shuffle, as the JSON names them.
const (
	// shuffleCluster: a JobManager and two TaskManager processes, one
	// slot each; the keyed exchange crosses TCP between the processes.
	shuffleCluster = "cluster"
	// shuffleInProcess: local mode, one TaskManager: every channel in
	// process, records passed as typed batches.
	shuffleInProcess = "in-process"
	// shuffleInProcess2TM: local mode with two in-process TaskManagers,
	// the exchange between them over loopback TCP, encoded.
	shuffleInProcess2TM = "in-process-2tm"
)

// shuffleTarget is the cluster figure the bench is held to, records/s.
const shuffleTarget = 3_000_000

// shuffleRun is one run of one mode.
type shuffleRun struct {
	Seconds       float64 `json:"seconds"`
	RecordsPerSec float64 `json:"records_per_sec"`
	// RemoteBytes are the encoded record bytes sent between
	// TaskManagers; RemoteRecords the records among them (cluster only:
	// the TaskManagers count records, local mode's JobStatus does not).
	RemoteBytes       int64   `json:"remote_bytes"`
	RemoteBytesPerSec float64 `json:"remote_bytes_per_sec"`
	RemoteRecords     int64   `json:"remote_records,omitempty"`
}

// shuffleMode is one mode's figures: its runs and the run of median time,
// whose rates are also the mode's.
type shuffleMode struct {
	Mode              string       `json:"mode"`
	RecordsPerSec     float64      `json:"records_per_sec"`
	RemoteBytesPerSec float64      `json:"remote_bytes_per_sec"`
	Runs              []shuffleRun `json:"runs"`
	Median            shuffleRun   `json:"median"`
}

// shuffleReport is what bench shuffle --json prints.
type shuffleReport struct {
	Bench  string         `json:"bench"`
	Config map[string]any `json:"config"`
	Modes  []shuffleMode  `json:"modes"`
	// Ratio is cluster / in-process records/s; Ratio2TM is in-process-2tm
	// / in-process: the cost of encoding and TCP without process
	// boundaries.
	Ratio    float64           `json:"ratio"`
	Ratio2TM float64           `json:"ratio_in_process_2tm"`
	Targets  []targetResult    `json:"targets"`
	Notes    map[string]string `json:"notes"`
}

const shuffleLong = `shuffle runs keyed-sum (weir run keyed-sum: the demo's generated
payments keyed by account, per-account count and total in heap state, a
counting sink) at parallelism 2 on a JobManager and two TaskManager
processes (1 slot each) that it starts from this binary on free loopback
ports, in a temporary folder. Each TaskManager runs one source and one
aggregator subtask, so the records whose account belongs to the other
aggregator (about half) cross TCP between the processes, encoded and
decoded, with credit-based flow control.

In the same rounds it runs the same job in this process: local mode with
one TaskManager (every channel in process), and local mode with two
in-process TaskManagers whose exchange goes over loopback TCP. Rounds
alternate the modes; the run of median time is reported per mode.

Time is from RUNNING to FINISHED on the JobManager (for the cluster: the
job's start from GET /jobs/{id}, its end from the JobManager's job record):
deploying and starting the tasks, opening the channels, every record, and
the tasks' end; not submission, graph building or slot allocation. Remote
bytes are the encoded record bytes sent between TaskManagers (the
TaskManagers' weir_taskmanager_numBytesOutRemote before and after; in local
mode the job's remote channel counters).

--profile-dir DIR makes each TaskManager write a CPU profile of its life to
DIR/tm-N.pprof (go tool pprof -top DIR/tm-0.pprof).`

func newShuffleBench() *cobra.Command {
	var (
		records, keys int64
		runs          int
		asJSON        bool
		profileDir    string
	)
	c := &cobra.Command{
		Use:   "shuffle",
		Short: "keyed-sum across a JobManager and two TaskManager processes, beside the in-process figure",
		Long:  shuffleLong,
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if records < 1 {
				return usagef("--records must be at least 1, got %d", records)
			}
			if keys < 1 {
				return usagef("--keys must be at least 1, got %d", keys)
			}
			if runs < 1 {
				return usagef("--runs must be at least 1, got %d", runs)
			}
			if profileDir != "" {
				if err := checkWritableDir("--profile-dir", profileDir); err != nil {
					return err
				}
			}
			rep, err := runShuffleBench(c, records, keys, runs, profileDir)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(os.Stdout).Encode(rep)
			}
			printShuffle(rep)
			return nil
		},
	}
	fs := c.Flags()
	fs.Int64Var(&records, "records", 20_000_000, "events per run")
	fs.Int64Var(&keys, "keys", 1000, "accounts")
	fs.IntVar(&runs, "runs", 3, "rounds; each runs every mode once, and the median run per mode is reported")
	fs.BoolVar(&asJSON, "json", false, "print one JSON object")
	fs.StringVar(&profileDir, "profile-dir", "", "write a CPU profile of each TaskManager process to this folder (tm-0.pprof, tm-1.pprof)")
	return c
}

func runShuffleBench(c *cobra.Command, records, keys int64, runs int, profileDir string) (shuffleReport, error) {
	ctx := c.Context()
	dir, err := os.MkdirTemp("", "weir-bench-shuffle-*")
	if err != nil {
		return shuffleReport{}, err
	}
	defer os.RemoveAll(dir)
	cl, err := startBenchCluster(ctx, dir, profileDir)
	if err != nil {
		return shuffleReport{}, err
	}
	defer cl.stop()
	order := []string{shuffleCluster, shuffleInProcess, shuffleInProcess2TM}
	byMode := map[string][]shuffleRun{}
	for r := range runs {
		for _, m := range order {
			var run shuffleRun
			var err error
			switch m {
			case shuffleCluster:
				run, err = cl.runKeyedSum(ctx, r, records, keys)
			case shuffleInProcess:
				run, err = runLocalKeyedSum(ctx, records, keys, 1)
			case shuffleInProcess2TM:
				run, err = runLocalKeyedSum(ctx, records, keys, 2)
			}
			if err != nil {
				return shuffleReport{}, err
			}
			if run.Seconds <= 0 {
				// Millisecond timestamps: a run this short has no rate.
				return shuffleReport{}, fmt.Errorf("bench shuffle: the %s run took under a millisecond: give more --records", m)
			}
			run.RecordsPerSec = float64(records) / run.Seconds
			run.RemoteBytesPerSec = float64(run.RemoteBytes) / run.Seconds
			byMode[m] = append(byMode[m], run)
		}
	}
	rep := shuffleReport{
		Bench: "shuffle",
		Config: map[string]any{
			"records": records, "keys": keys, "parallelism": 2, "runs": runs,
			"task_managers": benchTaskManagers, "slots_per_task_manager": 1, "checkpoint_interval": "0",
		},
		Notes: map[string]string{
			"time":         "RUNNING to FINISHED on the JobManager: task deployment, channel setup, every record, task end; not submission, graph building or slot allocation",
			"remote_bytes": "encoded record bytes sent between TaskManagers (Data frame payloads, without frame headers, events or credits)",
			"machine":      machineNote(),
		},
	}
	rates := map[string]float64{}
	for _, m := range order {
		md := summarizeShuffle(m, byMode[m])
		rates[m] = md.RecordsPerSec
		rep.Modes = append(rep.Modes, md)
	}
	rep.Ratio = rates[shuffleCluster] / rates[shuffleInProcess]
	rep.Ratio2TM = rates[shuffleInProcess2TM] / rates[shuffleInProcess]
	rep.Targets = []targetResult{{
		Name:   "cluster records/s >= 3M",
		Pass:   rates[shuffleCluster] >= shuffleTarget,
		Detail: fmt.Sprintf("%.2fM records/s across two TaskManager processes", rates[shuffleCluster]/1e6),
	}}
	return rep, nil
}

// summarizeShuffle picks the run of median time (the slower middle one
// for an even count, as median does).
func summarizeShuffle(mode string, runs []shuffleRun) shuffleMode {
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b shuffleRun) int {
		switch {
		case a.Seconds < b.Seconds:
			return -1
		case a.Seconds > b.Seconds:
			return 1
		}
		return 0
	})
	med := sorted[len(sorted)/2]
	return shuffleMode{Mode: mode, RecordsPerSec: med.RecordsPerSec, RemoteBytesPerSec: med.RemoteBytesPerSec, Runs: runs, Median: med}
}

func printShuffle(rep shuffleReport) {
	cfg := rep.Config
	fmt.Printf("shuffle  records=%d keys=%d parallelism=2 runs=%d (modes alternate; median run per mode)\n", cfg["records"], cfg["keys"], cfg["runs"])
	what := map[string]string{
		shuffleCluster:      "JobManager + 2 TaskManager processes, 1 slot each",
		shuffleInProcess:    "local mode, 1 TaskManager",
		shuffleInProcess2TM: "local mode, 2 TaskManagers over loopback",
	}
	for _, m := range rep.Modes {
		fmt.Printf("  %-15s %7.2fM records/s  %7.1f MB/s remote  (median %.3fs; %s)\n",
			m.Mode, m.RecordsPerSec/1e6, m.RemoteBytesPerSec/1e6, m.Median.Seconds, what[m.Mode])
	}
	fmt.Printf("  ratio cluster / in-process         %.3f\n", rep.Ratio)
	fmt.Printf("  ratio in-process-2tm / in-process  %.3f\n", rep.Ratio2TM)
	for _, t := range rep.Targets {
		verdict := "FAIL"
		if t.Pass {
			verdict = "pass"
		}
		fmt.Printf("  target %s: %s (%s)\n", t.Name, verdict, t.Detail)
	}
}
