package bench

// The children of bench nexmark: each runs one measurement and prints one
// JSON line; the parent reads the child's CPU time from its rusage.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	nxq "github.com/weirstream/weir/internal/jobs/nexmark"
)

// runChild runs the measurement --child-mode names.
func (o nexmarkOpts) runChild(ctx context.Context, queries []*nxq.Query) error {
	if ctx == nil {
		ctx = context.Background()
	}
	dir, err := os.MkdirTemp("", "weir-bench-nexmark-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p := nxq.Params{Gen: nexmark.DefaultConfig()}
	r := nexmarkChildResult{Role: o.childMode, Events: o.events}
	switch o.childMode {
	case nexmarkChildGenerator:
		env, err := o.engineEnv(dir)
		if err != nil {
			return err
		}
		nxq.BuildGenerator(env, p.Gen, o.events)
		if err := o.execute(ctx, env, "nexmark-generator", &r); err != nil {
			return err
		}
	case nexmarkChildEngine, nexmarkChildBaseline:
		if len(queries) != 1 {
			return usagef("--child-mode %s measures one query, not --query %s", o.childMode, o.query)
		}
		q := queries[0]
		r.Query = q.Name
		if o.childMode == nexmarkChildBaseline {
			out := &nxq.RefOut{}
			t0 := time.Now()
			if err := q.Reference(p, o.events, out); err != nil {
				return fmt.Errorf("%s reference: %w", q.Name, err)
			}
			r.Seconds, r.Rows = time.Since(t0).Seconds(), out.Rows
			break
		}
		env, err := o.engineEnv(dir)
		if err != nil {
			return err
		}
		if err := nxq.BuildQuery(env, q, o.events, 0, p); err != nil {
			return fmt.Errorf("build %s: %w", q.Name, err)
		}
		stop, err := startCPUProfile(o.cpuProfile)
		if err != nil {
			return err
		}
		err = o.execute(ctx, env, "nexmark-"+q.Name, &r)
		stop()
		if err != nil {
			return err
		}
	default:
		return usagef("--child-mode %q: want %s, %s or %s", o.childMode, nexmarkChildEngine, nexmarkChildGenerator, nexmarkChildBaseline)
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// execute runs env's job to its end and fills the wall time and the
// completed checkpoints.
func (o nexmarkOpts) execute(ctx context.Context, env *weir.Env, name string, r *nexmarkChildResult) error {
	t0 := time.Now()
	if err := env.Execute(ctx, name); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	r.Seconds = time.Since(t0).Seconds()
	r.Checkpoints = hooks.Plan(env).Status.CompletedCheckpoints.Load()
	return nil
}

// engineEnv is Flink's Nexmark setup: parallelism = cores, exactly-once
// checkpoints every 10 s, the chosen state backend (lsm under dir).
func (o nexmarkOpts) engineEnv(dir string) (*weir.Env, error) {
	cfg := weir.NewConfig()
	set := map[string]string{
		config.ParallelismDefault:    fmt.Sprint(runtime.NumCPU()),
		config.CheckpointingInterval: fmt.Sprintf("%dms", o.interval.Milliseconds()),
		config.CheckpointsDir:        filepath.Join(dir, "checkpoints"),
		config.StateBackendType:      o.backend,
	}
	if o.backend == config.BackendLSM {
		lsm := filepath.Join(dir, "lsm")
		if err := os.MkdirAll(lsm, 0o755); err != nil {
			return nil, fmt.Errorf("bench nexmark: the lsm store folder: %w", err)
		}
		set[config.StateBackendLSMDir] = lsm
	}
	for k, v := range set {
		if err := cfg.Set(k, v); err != nil {
			return nil, fmt.Errorf("bench nexmark: set %s: %w", k, err)
		}
	}
	return weir.NewEnv(weir.WithConfig(cfg)), nil
}
