package weir_test

import (
	"context"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/runtime"
)

// opaque cannot be encoded: its field is an interface.
type opaque struct {
	K int64
	V any
}

// TestRecordsWithoutEncodingCannotCrossTaskManagers: a job whose records
// must cross TaskManagers but have no encoding fails at once, naming the
// edge, the type and the fix, instead of restarting until the strategy
// gives up.
func TestRecordsWithoutEncodingCannotCrossTaskManagers(t *testing.T) {
	env, log := newEnv(testConfig(t, 2, "20ms", config.LocalTaskManagers, "2"))
	src := weir.FromSource(env, datagen.New(func(i int64) opaque { return opaque{K: i} }, datagen.WithCount(100))).Name("src").UID("src")
	ks := weir.Map(weir.Rebalance(src), func(o opaque) int64 { return o.K }).UID("k")
	weir.SinkTo(ks, func() weir.Sink[int64] { return discard{} }).UID("sink")
	err := env.Execute(context.Background(), "opaque")
	if err == nil || !runtime.IsUnrecoverable(err) {
		t.Fatalf("Execute = %v, want an unrecoverable error\nlog:\n%s", err, log)
	}
	for _, want := range []string{`records of edge "src"`, "weir_test.opaque", "cannot cross TaskManagers", "encoding.BinaryMarshaler"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
