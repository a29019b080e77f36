package kafka

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// TestAtLeastOnceDemo runs the demo into the at-least-once sink: without
// failures the records are exactly the expected lines; with failures at
// every point each expected line is there at least once and nothing else
// is.
func TestAtLeastOnceDemo(t *testing.T) {
	const n, k = 100_000, 97
	want := demo.Expected(n, k)
	b := newBroker(t)
	for _, nf := range []int{0, 3} {
		topic := b.topic(t, 3)
		j := newJob(t, 2)
		if nf > 0 {
			j.plan = onePerAttempt(nf, 5, n, faults.AllPoints()...)
		}
		res := j.run(t, func(env *weir.Env) {
			results := demo.Aggregate(env, demo.Options{Events: n, Keys: k})
			weir.SinkTo(results, AtLeastOnce(b.addrs, topic, func(r demo.Result, rec *kgo.Record) error {
				rec.Value = r.AppendLine(nil)
				return nil
			})).UID("kafka")
		})
		if res.err != nil {
			t.Fatalf("%d failures: Execute: %v", nf, res.err)
		}
		got := b.readCommitted(t, topic)
		if nf == 0 {
			if d := demo.Diff(want, got); d != "" {
				t.Fatalf("without failures: %s", d)
			}
			continue
		}
		distinct := slices.Compact(sorted(got))
		if d := demo.Diff(want, distinct); d != "" {
			t.Fatalf("with %d failures, distinct records: %s", nf, d)
		}
		t.Logf("%d failures: %d records, %d duplicates", nf, len(got), len(got)-len(distinct))
	}
}
