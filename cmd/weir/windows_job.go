package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/app"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/windows"
)

const windowsLong = `windows generates events i = 0 … N-1 with account = (i*7919) mod K and
amount = ((i*2654435761) mod 2^32) mod 1000 + 1 (as the demo) and event
time ts = i*E + M - d ms, d = ((i*2246822519) mod 2^32) mod (M+1): at most
M ms out of order. Watermarks bound the out-of-orderness by O (watermark =
largest ts seen - O - 1). Windows keyed by account on event time count and
sum the amounts, and every firing writes "account,start,end,count,sum" into
an exactly-once file sink in --out; an event later than its window's end
plus the allowed lateness L is dropped and written as "i,account,ts" to
<out>/late. The end of the input fires every window still open.

--window is tumble:SIZE ([start, end) with start = ts - ts mod SIZE),
slide:SIZE,SLIDE (every [s, s+SIZE) with s a multiple of SLIDE holding
ts) or session:GAP (an account's events at most GAP apart share one
window [first ts, last ts + GAP)). Every size and time flag takes
milliseconds (2000) or a Go duration (2s, 1500ms); event time has
millisecond resolution.

With O >= M (the default O = M) no event is late and the output is a pure
function of the flags; --verify then checks that the committed lines are
exactly that multiset. With O < M, --verify checks tumbling windows only:
every event is counted in its window's last firing or listed in late/,
exactly once. Kill a run and start the same command again, or add
--inject-failures F: the committed output passes the same check.

With --jobmanager HOST:PORT the job runs on that cluster; --out and
--state-dir must then be folders every TaskManager reaches at the same
path (--verify reads --out here after the job FINISHED).`

// windowsFlags are the windows job's flags: one value per command line or
// build. The time flags stay strings until options parses them, the same
// way in Configure (where errors become usage errors) and in Build (every
// role).
type windowsFlags struct {
	jf             jobFlags
	events         int64
	keys           int64
	window         string
	spacing        string
	maxDisorder    string
	outOfOrderness string
	lateness       string
	rate           float64
	out            string
	verify         bool
}

// windowsJob is `weir run windows`.
func windowsJob() app.Job {
	return app.Job{
		Name:  "windows",
		Short: "Per-account event-time windows (tumbling, sliding, session) of generated payments, exactly once into files",
		Long:  windowsLong,
		Define: func(fs *pflag.FlagSet) app.Run {
			w := &windowsFlags{}
			w.register(fs)
			return app.Run{
				Configure: func(_ context.Context, cfg *weir.Config) error { return w.configure(fs, cfg) },
				Build:     w.build,
				Summary:   w.jf.faultSummary,
				Finish:    w.finish,
			}
		},
	}
}

func (w *windowsFlags) register(fs *pflag.FlagSet) {
	fs.Int64Var(&w.events, "events", 1_000_000, "events to generate (N)")
	fs.Int64Var(&w.keys, "keys", 1000, "number of accounts (K)")
	fs.StringVar(&w.window, "window", "", "tumble:SIZE, slide:SIZE,SLIDE or session:GAP (required; e.g. tumble:10s, slide:1000,250)")
	fs.StringVar(&w.spacing, "event-spacing", "1", "event time between consecutive events (E), ms or a duration")
	fs.StringVar(&w.maxDisorder, "max-disorder", "2000", "how far an event's time may lie behind i*E+M (M), ms or a duration")
	fs.StringVar(&w.outOfOrderness, "out-of-orderness", "", "the watermarks' bound on out-of-orderness (O), ms or a duration (default: --max-disorder; less makes events late)")
	fs.StringVar(&w.lateness, "allowed-lateness", "0", "how long after its end a window still takes late events and fires again (L), ms or a duration")
	fs.Float64Var(&w.rate, "rate", 0, "events per second over all subtasks; 0 = as fast as possible")
	fs.StringVar(&w.out, "out", "", "folder for the committed part files; late events go to <out>/late (default <state-dir>/out)")
	fs.BoolVar(&w.verify, "verify", false, "after the run, check the committed lines against the closed-form output")
	w.jf.register(fs, "1s")
	app.MarkPath(fs, "out")
	app.MarkClientOnly(fs, "verify")
}

// maxMillis is the largest time a flag may give: the window assigners and
// the watermark strategy take time.Durations.
const maxMillis = int64(math.MaxInt64 / time.Millisecond)

// options parses and checks the job's own flags.
func (w *windowsFlags) options() (windows.Options, error) {
	o := windows.Options{Events: w.events, Keys: w.keys, Rate: w.rate, Out: w.out, OutOfOrderness: -1}
	if w.window == "" {
		return o, fmt.Errorf("--window is required: tumble:SIZE, slide:SIZE,SLIDE or session:GAP (e.g. --window tumble:10s)")
	}
	spec, err := windows.ParseSpec(w.window)
	if err != nil {
		return o, err
	}
	o.Window = spec
	for _, v := range []int64{spec.Size, spec.Slide, spec.Gap} {
		if v > maxMillis {
			return o, fmt.Errorf("--window %q: size %d ms exceeds the largest duration (%d ms, about 292 years)", w.window, v, maxMillis)
		}
	}
	for _, f := range []struct {
		name, val string
		dst       *int64
	}{
		{"--event-spacing", w.spacing, &o.Spacing},
		{"--max-disorder", w.maxDisorder, &o.MaxDisorder},
		{"--out-of-orderness", w.outOfOrderness, &o.OutOfOrderness},
		{"--allowed-lateness", w.lateness, &o.Lateness},
	} {
		if f.val == "" {
			continue // --out-of-orderness: O = M
		}
		v, err := windows.ParseMillis(f.name, f.val)
		if err != nil {
			return o, err
		}
		if v < 0 {
			return o, fmt.Errorf("%s %s: must not be negative", f.name, f.val)
		}
		if v > maxMillis {
			return o, fmt.Errorf("%s %s: exceeds the largest duration (%d ms, about 292 years)", f.name, f.val, maxMillis)
		}
		*f.dst = v
	}
	if o.Spacing < 1 {
		return o, fmt.Errorf("--event-spacing %s: must be at least 1 ms", w.spacing)
	}
	if w.rate < 0 {
		return o, fmt.Errorf("--rate %g: must not be negative", w.rate)
	}
	if w.events < 1 {
		// The job is bounded: the end of the input fires the last windows.
		return o, fmt.Errorf("--events %d: must be at least 1 (the windows job is bounded)", w.events)
	}
	o.Defaults()
	if err := o.Validate(); err != nil {
		return o, err
	}
	if w.verify && o.OutOfOrderness < o.MaxDisorder && spec.Kind != "tumble" {
		return o, fmt.Errorf("--verify with --out-of-orderness %d < --max-disorder %d checks tumbling windows only, not %s: raise --out-of-orderness to %d or drop --verify", o.OutOfOrderness, o.MaxDisorder, w.window, o.MaxDisorder)
	}
	return o, nil
}

func (w *windowsFlags) lateDir() string { return filepath.Join(w.out, "late") }

// configure checks the flags where the job is launched; the default --out
// is set as a flag so that a submitted job carries it.
func (w *windowsFlags) configure(fs *pflag.FlagSet, cfg *weir.Config) error {
	o, err := w.options()
	if err != nil {
		return usagef("%v", err)
	}
	// With O >= M the watermark never passes an event's time (see
	// windowsLong), so no window ever gets a late event to fire again for.
	if err := refuseIneffective(fs,
		ineffective{flag: "allowed-lateness", when: o.Lateness > 0 && o.OutOfOrderness >= o.MaxDisorder,
			where:   fmt.Sprintf("with --out-of-orderness %d >= --max-disorder %d", o.OutOfOrderness, o.MaxDisorder),
			instead: fmt.Sprintf("no event is ever late then; give --out-of-orderness below %d to make events late, or drop --allowed-lateness", o.MaxDisorder)},
		verifyDetached(fs),
	); err != nil {
		return err
	}
	if err := w.jf.configure(fs, cfg); err != nil {
		return err
	}
	if err := w.jf.quickRestarts(cfg); err != nil {
		return err
	}
	if w.out == "" {
		if err := fs.Set("out", filepath.Join(hooks.Config(cfg).String(config.CheckpointsDir), "out")); err != nil {
			return err
		}
	}
	for _, d := range []string{w.out, w.lateDir()} {
		if err := checkWritableDir("--out", d); err != nil {
			return err
		}
	}
	return nil
}

// build declares the graph, in a local run and in every cluster role.
func (w *windowsFlags) build(env *weir.Env) error {
	o, err := w.options()
	if err != nil {
		return usagef("%v", err)
	}
	w.jf.apply(env, w.events)
	windows.Build(env, o)
	return nil
}

// finish reports the committed lines and, with --verify, checks them.
func (w *windowsFlags) finish(context.Context, app.Outcome) error {
	o, err := w.options()
	if err != nil {
		return err
	}
	lines, err := file.ReadCommitted(w.out)
	if err != nil {
		return err
	}
	late, err := file.ReadCommitted(w.lateDir())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	fmt.Fprintf(os.Stderr, "committed %d window lines to %s and %d late events to %s\n", len(lines), w.out, len(late), w.lateDir())
	if !w.verify {
		return nil
	}
	if err := windows.Verify(o, lines, late); err != nil {
		return fmt.Errorf("verify: committed output is wrong: %v", err)
	}
	if o.OutOfOrderness >= o.MaxDisorder {
		fmt.Fprintln(os.Stderr, "verify: committed output equals the failure-free output exactly")
	} else {
		fmt.Fprintf(os.Stderr, "verify: every event is counted in its window's last firing or listed as late, exactly once (%d late)\n", len(late))
	}
	return nil
}
