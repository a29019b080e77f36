package testutil

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
)

// FaultConfig is the configuration the fault-injection tests share:
// parallelism, checkpoint folder and interval, small batches and few
// credits (few records in flight, so a barrier gets through quickly and
// checkpoints complete early in a run: most injected failures then restore
// from a checkpoint), and fixed-delay restarts (100 attempts, 1 ms) unless
// restartNone. extra keys are set last.
func FaultConfig(t testing.TB, parallelism int, stateDir, interval string, restartNone bool, extra map[string]string) *weir.Config {
	t.Helper()
	cfg := weir.NewConfig()
	set := func(k, v string) {
		if err := cfg.Set(k, v); err != nil {
			t.Fatalf("config %s=%s: %v", k, v, err)
		}
	}
	set(config.ParallelismDefault, fmt.Sprint(parallelism))
	set(config.CheckpointsDir, stateDir)
	set(config.CheckpointingInterval, interval)
	set(config.BatchSize, "256")
	set(config.NetworkCreditsPerChannel, "2")
	if restartNone {
		set(config.RestartStrategyType, config.RestartNone)
	} else {
		set(config.RestartStrategyType, config.RestartFixed)
		set(config.FixedDelayAttempts, "100")
		set(config.FixedDelayDelay, "1ms")
	}
	for k, v := range extra {
		set(k, v)
	}
	return cfg
}

// Observe logs env's job at info level into a SyncBuffer and, with a plan,
// injects its failures; it returns both (the injector is nil without one).
func Observe(env *weir.Env, plan *faults.Plan) (*SyncBuffer, *faults.Injector) {
	log := &SyncBuffer{}
	hooks.Plan(env).Logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var inj *faults.Injector
	if plan != nil {
		inj = faults.New(*plan)
		hooks.Plan(env).Faults = inj
	}
	return log, inj
}
