package coordinator

import (
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
)

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero config (defaults): %v", err)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Interval: -time.Second}, "execution.checkpointing.interval must not be negative, got -1s (use 0 to disable periodic checkpoints)"},
		{Config{Timeout: -time.Second}, "execution.checkpointing.timeout must be positive, got -1s"},
		{Config{MinPause: -time.Millisecond}, "execution.checkpointing.min-pause must not be negative, got -1ms"},
		{Config{MaxConcurrent: -1}, "execution.checkpointing.max-concurrent-checkpoints must be at least 1, got -1"},
		{Config{TolerableFailures: -2}, "execution.checkpointing.tolerable-failed-checkpoints must not be negative, got -2"},
		{Config{StorageFailureTimeout: -time.Second}, "execution.checkpointing.storage-failure-timeout must not be negative, got -1s (0: never fail the job for it)"},
		{Config{Timeout: -time.Second, TolerableFailures: -1},
			"execution.checkpointing.timeout must be positive, got -1s\nexecution.checkpointing.tolerable-failed-checkpoints must not be negative, got -1"},
	} {
		err := tc.cfg.Validate()
		if err == nil || err.Error() != tc.want {
			t.Errorf("Validate(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	got := Config{MinPause: time.Second, MaxConcurrent: 5}.withDefaults()
	want := Config{Timeout: DefaultTimeout, MinPause: time.Second, MaxConcurrent: 1, StorageMaxBackoff: DefaultStorageMaxBackoff, AlertEvery: DefaultAlertEvery}
	if got != want {
		t.Fatalf("withDefaults = %+v, want %+v", got, want)
	}
	if got := (Config{}).withDefaults(); got != DefaultConfig() {
		t.Fatalf("zero config with defaults = %+v, want %+v", got, DefaultConfig())
	}
}

func TestNewPanicsOnCallerBugs(t *testing.T) {
	tasks := []checkpoint.TaskID{{}}
	for name, f := range map[string]func(){
		"invalid config": func() { New(Config{Timeout: -1}, tasks, tasks, 1, epoch) },
		"no tasks":       func() { New(DefaultConfig(), nil, nil, 1, epoch) },
		"id zero":        func() { New(DefaultConfig(), tasks, tasks, 0, epoch) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: New did not panic", name)
				}
			}()
			f()
		}()
	}
}
