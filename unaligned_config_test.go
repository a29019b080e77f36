package weir_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/connectors/print"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
)

// TestUnalignedConfigRefused: settings that cannot work together are
// refused when the job starts, naming the keys and the fix.
func TestUnalignedConfigRefused(t *testing.T) {
	cases := []struct {
		name  string
		extra []string
		want  string
	}{
		{"at-least-once", []string{config.CheckpointingUnaligned, "true", config.CheckpointingMode, config.ModeAtLeastOnce},
			"execution.checkpointing.unaligned.enabled needs execution.checkpointing.mode EXACTLY_ONCE"},
		{"concurrent", []string{config.CheckpointingUnaligned, "true", config.CheckpointingMaxConcurrent, "2"},
			"needs execution.checkpointing.max-concurrent-checkpoints 1, got 2"},
		{"timeout without unaligned", []string{config.CheckpointingAlignedTimeout, "100ms"},
			"aligned-checkpoint-timeout 100ms needs execution.checkpointing.unaligned.enabled true"},
	}
	for _, c := range cases {
		env, _ := newEnv(testConfig(t, 1, "50ms", c.extra...))
		src := weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(10)))
		weir.SinkTo(weir.Map(src, func(v int64) int64 { return v }), print.New[int64](&bytes.Buffer{}))
		err := env.Execute(context.Background(), "refused")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Execute = %v\nwant an error containing %q", c.name, err, c.want)
		}
	}
}

// TestUnalignedUnencodableRecords: in-flight records become channel state,
// so a record type without a codec on an exchange fails the job at start,
// for good, naming the edge, the type and the fix.
func TestUnalignedUnencodableRecords(t *testing.T) {
	env, _ := newEnv(testConfig(t, 2, "50ms", config.CheckpointingUnaligned, "true"))
	src := weir.FromSource(env, datagen.New(ints(0), datagen.WithCount(10))).Name("numbers")
	chans := weir.Map(src, func(v int64) chan int64 { return nil }).Name("to-chan")
	out := weir.Map(weir.Rebalance(chans), func(c chan int64) string { return "" }).Name("drop").Parallelism(3)
	weir.SinkTo(out, print.New[string](&bytes.Buffer{}))
	err := env.Execute(context.Background(), "unencodable")
	for _, want := range []string{`edge "to-chan" -> "Rebalance" (type chan int64)`, "make the type encodable or disable execution.checkpointing.unaligned.enabled"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Execute = %v\nwant an error containing %q", err, want)
		}
	}
	if n := hooks.Plan(env).Status.Restarts.Load(); n != 0 {
		t.Errorf("%d restarts: a record type cannot change by restarting", n)
	}
}
