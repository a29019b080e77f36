package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/hooks"
)

// storeJob is countJob with a --state-dir flag standing for
// state.checkpoints.dir, folded in as cmd/weir's jobs do: an explicit
// flag wins over -D and --config; its default applies only if neither set
// the key.
func storeJob(defaultDir string) Job {
	j := countJob()
	define := j.Define
	j.Define = func(fs *pflag.FlagSet) Run {
		run := define(fs)
		var dir string
		fs.StringVar(&dir, "state-dir", defaultDir, "checkpoints")
		MarkConfigKey(fs, "state-dir", "state.checkpoints.dir")
		configure := run.Configure
		run.Configure = func(ctx context.Context, cfg *weir.Config) error {
			if err := configure(ctx, cfg); err != nil {
				return err
			}
			if fs.Changed("state-dir") || !cfg.IsSet("state.checkpoints.dir") {
				return cfg.Set("state.checkpoints.dir", dir)
			}
			return nil
		}
		return run
	}
	return j
}

// TestStorageLines: a local run names its checkpoint storage and where the
// value came from at the start, naming the values it overrides, and its
// summary line names the storage.
func TestStorageLines(t *testing.T) {
	dir := t.TempDir()
	x, y, z, def := filepath.Join(dir, "x"), filepath.Join(dir, "y"), filepath.Join(dir, "z"), filepath.Join(dir, "def")
	yaml := filepath.Join(dir, "conf.yaml")
	if err := os.WriteFile(yaml, []byte("state.checkpoints.dir: "+z+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		args []string
		want string // the line after "checkpoint storage: "
		at   string // the storage root
	}{
		{[]string{"-D", "state.checkpoints.dir=" + y}, "(from -D state.checkpoints.dir)", y},
		{[]string{"--state-dir", x, "-D", "state.checkpoints.dir=" + y},
			"(from --state-dir; -D state.checkpoints.dir=" + y + " is overridden)", x},
		{[]string{"--state-dir", x, "--config", yaml, "-D", "state.checkpoints.dir=" + y},
			"(from --state-dir; -D state.checkpoints.dir=" + y + ", state.checkpoints.dir: " + z + " in --config " + yaml + " are overridden)", x},
		{[]string{"--config", yaml, "-D", "state.checkpoints.dir=" + y},
			"(from -D state.checkpoints.dir; state.checkpoints.dir: " + z + " in --config " + yaml + " is overridden)", y},
		{[]string{"--config", yaml}, "(from --config " + yaml + ")", z},
		{[]string{"--state-dir", x, "-D", "state.checkpoints.dir=" + x}, "(from --state-dir)", x},
		{nil, "(from the default of --state-dir)", def},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			p, _, stderr := testProgram(nil)
			p.Jobs = []Job{storeJob(def)}
			args := append([]string{"run", "count", "--events", "300", "--out", filepath.Join(dir, fmt.Sprint("out", i))}, tc.args...)
			if code := p.Run(context.Background(), args); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			loc := filepath.Join(tc.at, "count")
			lines := strings.Split(stderr.String(), "\n")
			want := []string{
				"job count: starting from scratch (no checkpoint in " + loc + ")",
				"checkpoint storage: " + loc + " " + tc.want,
			}
			if len(lines) < 3 || lines[0] != want[0] || lines[1] != want[1] {
				t.Errorf("stderr does not start with\n%s\n%s\ngot:\n%s", want[0], want[1], stderr)
			}
			if !strings.HasPrefix(lines[2], "ran ") || !strings.HasSuffix(lines[2], "; checkpoint storage "+loc) {
				t.Errorf("summary line %q does not end in %q", lines[2], "; checkpoint storage "+loc)
			}
			// The cases share roots: the next one into loc must not be
			// refused for this finished run (docs/guarantees.md, "Running
			// a job again").
			if err := os.RemoveAll(loc); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestStorageLinePlainJob: a job without a flag for the key says -D, or
// weir's default.
func TestStorageLinePlainJob(t *testing.T) {
	dir := t.TempDir()
	p, _, stderr := testProgram(nil)
	if code := p.Run(context.Background(), []string{"run", "count", "--events", "300", "--out", filepath.Join(dir, "out"), "-D", "state.checkpoints.dir=file://" + dir}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "\ncheckpoint storage: " + filepath.Join(dir, "count") + " (from -D state.checkpoints.dir)\n"
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr does not hold %q:\n%s", want, stderr)
	}
}

// TestLocalRunAggregatesWarnings: the job's logger in a local run
// aggregates repeated warnings; the summary is written before the run's
// summary line, INFO records pass unchanged.
func TestLocalRunAggregatesWarnings(t *testing.T) {
	dir := t.TempDir()
	p, _, stderr := testProgram(nil)
	j := countJob()
	define := j.Define
	j.Define = func(fs *pflag.FlagSet) Run {
		run := define(fs)
		build := run.Build
		run.Build = func(env *weir.Env) error {
			hooks.Plan(env).Logger = slog.New(slog.NewTextHandler(p.stderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
			return build(env)
		}
		run.Execute = func(ctx context.Context, env *weir.Env, name string) error {
			log := hooks.Plan(env).Logger
			for i := range 1000 {
				log.With("task", "aggregate", "subtask", i%2).Warn("declining checkpoint: asynchronous snapshot failed", "checkpoint", i, "err", fmt.Errorf("write chk-%d: no space left on device", i))
			}
			log.Info("test progress", "id", 1)
			log.Info("test progress", "id", 2)
			return env.Execute(ctx, name)
		}
		return run
	}
	p.Jobs = []Job{j}
	if code := p.Run(context.Background(), []string{"run", "count", "--events", "300", "--out", filepath.Join(dir, "out"), "-D", "state.checkpoints.dir=" + dir}); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	s := stderr.String()
	first := strings.Index(s, `msg="declining checkpoint: asynchronous snapshot failed" task=aggregate subtask=0 checkpoint=0 `)
	summary := strings.Index(s, `msg="declining checkpoint: asynchronous snapshot failed (repeated 999 times in the last `)
	ran := strings.Index(s, "\nran ")
	if first < 0 || summary < 0 || ran < 0 || !(first < summary && summary < ran) {
		t.Errorf("want the first warning, its summary (999 repeats), then the run's summary line:\n%s", s)
	}
	if !strings.Contains(s[summary:], " repeated=999 ") || !strings.Contains(s[summary:], "checkpoint=999 ") {
		t.Errorf("the summary does not carry the count and the newest checkpoint:\n%s", s)
	}
	if n := strings.Count(s, "level=WARN"); n != 2 {
		t.Errorf("%d warning lines, want 2:\n%s", n, s)
	}
	if n := strings.Count(s, `level=INFO msg="test progress" id=`); n != 2 {
		t.Errorf("%d INFO lines, want 2:\n%s", n, s)
	}
}
