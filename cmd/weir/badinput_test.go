package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBadInput checks that every kind of bad flag, key, value and path is
// refused with exit code 2 and a one-line message naming it, before any work
// starts: no job folder is created in the state dir.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "regular-file")
	badYAML := filepath.Join(dir, "bad.yaml")
	badValueYAML := filepath.Join(dir, "bad-value.yaml")
	for name, content := range map[string]string{
		regular:      "not a folder\n",
		badYAML:      "execution.checkpointing.interval: [oops\n",
		badValueYAML: "execution:\n  checkpointing:\n    interval: 50 ms\nstate.checkpoints.num-retained: 0\n",
	} {
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	missing := filepath.Join(dir, "missing.yaml")
	noMatch := filepath.Join(dir, "nothing-*.txt")
	underFile := filepath.Join(regular, "sub")
	for _, tc := range []struct {
		name string
		args []string // after "run"; a job gets a fresh --state-dir unless it has one
		want []string // substrings of the message
	}{
		{"unknown flag", []string{"demo", "--no-such-flag"}, []string{"--no-such-flag"}},
		{"unknown -D key", []string{"demo", "-D", "execution.checkpointing.intervall=1s"},
			[]string{`"execution.checkpointing.intervall"`, `did you mean "execution.checkpointing.interval"`}},
		{"bad -D value", []string{"demo", "-D", "execution.checkpointing.interval=soon"},
			[]string{"execution.checkpointing.interval", `"soon"`}},
		{"-D without =", []string{"demo", "-D", "parallelism.default"}, []string{"parallelism.default"}},
		{"negative checkpoint interval", []string{"demo", "--checkpoint-interval", "-1s"}, []string{"--checkpoint-interval", "-1s"}},
		{"negative events", []string{"demo", "--events", "-1"}, []string{"--events", "-1"}},
		{"unknown state backend", []string{"demo", "--state-backend", "disk"}, []string{"--state-backend", `"disk"`, "heap, lsm"}},
		{"zero parallelism", []string{"demo", "--parallelism", "0"}, []string{"--parallelism", "got 0"}},
		{"zero keys", []string{"demo", "--keys", "0"}, []string{"--keys", "got 0"}},
		{"negative rate", []string{"demo", "--rate", "-5"}, []string{"--rate", "-5"}},
		{"negative inject-failures", []string{"demo", "--inject-failures", "-1"}, []string{"--inject-failures", "-1"}},
		{"verify unbounded", []string{"demo", "--events", "0", "--verify"}, []string{"--verify", "--events"}},
		{"state dir under a file", []string{"demo", "--state-dir", underFile}, []string{"--state-dir", underFile}},
		{"out under a file", []string{"demo", "--out", underFile}, []string{"--out", underFile}},
		{"missing config", []string{"demo", "--config", missing}, []string{"--config", missing}},
		{"malformed YAML", []string{"demo", "--config", badYAML}, []string{"--config", badYAML, "line 1"}},
		{"bad value in YAML", []string{"demo", "--config", badValueYAML}, []string{"--config", badValueYAML, "line 4", "state.checkpoints.num-retained"}},
		{"from missing path", []string{"demo", "--from", filepath.Join(dir, "chk-9")}, []string{"--from", filepath.Join(dir, "chk-9")}},
		{"unknown job", []string{"nosuchjob"}, []string{`"nosuchjob"`}},
		{"wordcount without input", []string{"wordcount", "--out", filepath.Join(dir, "wc-out")}, []string{"--input"}},
		{"wordcount input matches nothing", []string{"wordcount", "--input", noMatch, "--out", filepath.Join(dir, "wc-out")},
			[]string{"--input", noMatch}},
		{"windows without --window", []string{"windows"}, []string{"--window is required", "tumble:SIZE"}},
		{"windows: --window without sizes", []string{"windows", "--window", "tumble"}, []string{"--window", `"tumble"`, "tumble:SIZE, slide:SIZE,SLIDE or session:GAP"}},
		{"windows: unknown window", []string{"windows", "--window", "hop:10"}, []string{"--window", `unknown window "hop"`}},
		{"windows: slide with one size", []string{"windows", "--window", "slide:10"}, []string{"--window", "slide takes 2"}},
		{"windows: tumble with two sizes", []string{"windows", "--window", "tumble:10s,5"}, []string{"--window", "tumble takes 1"}},
		{"windows: negative size", []string{"windows", "--window", "tumble:-5"}, []string{"--window", `"tumble:-5"`, "positive"}},
		{"windows: zero slide", []string{"windows", "--window", "slide:10,0"}, []string{"--window", "positive"}},
		{"windows: sub-millisecond size", []string{"windows", "--window", "session:1500us"}, []string{"--window", "millisecond resolution"}},
		{"windows: overflowing size", []string{"windows", "--window", "tumble:9223372036854775807"}, []string{"--window", "exceeds the largest duration"}},
		{"windows: unparsable size", []string{"windows", "--window", "tumble:soon"}, []string{"--window", `"soon"`, "milliseconds"}},
		{"windows: negative out-of-orderness", []string{"windows", "--window", "tumble:1s", "--out-of-orderness", "-1"}, []string{"--out-of-orderness", "-1", "negative"}},
		{"windows: bad out-of-orderness", []string{"windows", "--window", "tumble:1s", "--out-of-orderness", "soon"}, []string{"--out-of-orderness", `"soon"`, "Go duration"}},
		{"windows: negative lateness", []string{"windows", "--window", "tumble:1s", "--allowed-lateness", "-1s"}, []string{"--allowed-lateness", "-1s", "negative"}},
		{"windows: negative max-disorder", []string{"windows", "--window", "tumble:1s", "--max-disorder", "-2"}, []string{"--max-disorder", "negative"}},
		{"windows: zero event spacing", []string{"windows", "--window", "tumble:1s", "--event-spacing", "0"}, []string{"--event-spacing", "at least 1 ms"}},
		{"windows: zero events", []string{"windows", "--window", "tumble:1s", "--events", "0"}, []string{"--events", "bounded"}},
		{"windows: zero keys", []string{"windows", "--window", "tumble:1s", "--keys", "0"}, []string{"--keys", "at least 1"}},
		{"windows: negative rate", []string{"windows", "--window", "tumble:1s", "--rate", "-5"}, []string{"--rate", "-5"}},
		{"windows: event time overflows", []string{"windows", "--window", "tumble:1s", "--events", "4611686018427387904", "--event-spacing", "2"}, []string{"--events", "overflows event time"}},
		{"windows: verify late non-tumbling", []string{"windows", "--window", "slide:10,5", "--out-of-orderness", "5", "--verify"}, []string{"--verify", "tumbling windows only", "--out-of-orderness"}},
		// Flags that would have no effect in the combination given.
		{"demo: rate with a kafka source", []string{"demo", "--source", "kafka://127.0.0.1:1/events", "--rate", "60000"},
			[]string{"--rate has no effect with --source kafka://127.0.0.1:1/events", "drop --rate"}},
		{"demo: events with a kafka source, no verify", []string{"demo", "--source", "kafka://127.0.0.1:1/events", "--events", "500"},
			[]string{"--events has no effect with --source kafka://127.0.0.1:1/events and without --verify", "add --verify"}},
		{"demo: out with a kafka sink", []string{"demo", "--sink", "kafka://127.0.0.1:1/lines", "--out", filepath.Join(dir, "demo-out")},
			[]string{"--out has no effect with --sink kafka://127.0.0.1:1/lines", "kafka topic lines", "drop --out"}},
		{"demo: out with a file sink URL", []string{"demo", "--sink", "file://" + filepath.Join(dir, "sink"), "--out", filepath.Join(dir, "demo-out")},
			[]string{"--out has no effect with --sink file://", "sends the output to " + filepath.Join(dir, "sink")}},
		{"demo: out with a postgres sink", []string{"demo", "--sink", "postgres://weir@127.0.0.1:1/db?table=t", "--out", filepath.Join(dir, "demo-out")},
			[]string{"--out has no effect with --sink postgres://", "postgres table t"}},
		{"demo: verify detached", []string{"demo", "--verify", "--detached", "--jobmanager", "127.0.0.1:1"},
			[]string{"--verify has no effect with --detached", "drop --detached"}},
		{"fault-points without failures", []string{"demo", "--fault-points", "commit"}, []string{"--fault-points has no effect without --inject-failures", "add --inject-failures N"}},
		{"fault-seed without failures", []string{"wordcount", "--input", filepath.Join(dir, "*.yaml"), "--out", filepath.Join(dir, "wc-out"), "--fault-seed", "3"},
			[]string{"--fault-seed has no effect without --inject-failures"}},
		{"from and from-savepoint", []string{"demo", "--from", filepath.Join(dir, "a"), "--from-savepoint", filepath.Join(dir, "b")},
			[]string{"--from-savepoint has no effect together with --from", "give one of them"}},
		{"windows: lateness without late events", []string{"windows", "--window", "tumble:1s", "--allowed-lateness", "300ms"},
			[]string{"--allowed-lateness has no effect with --out-of-orderness 2000 >= --max-disorder 2000", "below 2000"}},
		{"windows: verify detached", []string{"windows", "--window", "tumble:1s", "--verify", "--detached", "--jobmanager", "127.0.0.1:1"},
			[]string{"--verify has no effect with --detached"}},
		{"nexmark: side input of another query", []string{"nexmark", "--query", "q5", "--side-input", filepath.Join(dir, "side.csv")},
			[]string{"--side-input has no effect with --query q5", "--query q13"}},
		{"unknown fault point", []string{"windows", "--window", "tumble:1s", "--inject-failures", "1", "--fault-points", "commit,later"}, []string{"--fault-points", `"later"`, "process-record"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			state := filepath.Join(t.TempDir(), "state")
			args := append([]string{"run"}, tc.args...)
			if job := tc.args[0]; (job == "demo" || job == "wordcount" || job == "windows" || job == "nexmark") && !hasFlag(tc.args, "--state-dir") {
				args = append(args, "--state-dir", state)
			}
			res := runWeir(t, 30*time.Second, args...)
			wantExit(t, res, 2)
			if !strings.HasPrefix(res.stderr, "weir: ") || strings.Count(res.stderr, "\n") != 1 {
				t.Errorf("want one line \"weir: …\" on stderr, got:\n%s", res.stderr)
			}
			wantContains(t, res.stderr, tc.want...)
			if res.stdout != "" {
				t.Errorf("stdout %q, want nothing", res.stdout)
			}
			for _, job := range []string{"demo", "wordcount", "windows", "nexmark"} {
				if _, err := os.Stat(filepath.Join(state, job)); err == nil {
					t.Errorf("job folder %s was created: work started despite the bad input", filepath.Join(state, job))
				}
			}
		})
	}
}

func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}
