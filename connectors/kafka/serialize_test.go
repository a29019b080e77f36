package kafka

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
)

var errOdd = errors.New("odd multiple of 7")

// serializeNumber writes i, and rejects the values 7, 21, 35, …
func serializeNumber(i int64, r *kgo.Record) error {
	if i%14 == 7 {
		return errOdd
	}
	r.Value = strconv.AppendInt(nil, i, 10)
	return nil
}

// TestSinkSerializeErrors: a value the serializer rejects fails the job
// for good, naming the sink, the topic and the value's index in its
// batch; with WithSkipSerializeErrors the sinks (exactly-once and
// at-least-once) write every other value, log the skipped ones at WARN
// and count them in the metric.
func TestSinkSerializeErrors(t *testing.T) {
	const n = 1000
	b := newBroker(t)
	var want []string
	for i := range int64(n) {
		if i%14 != 7 {
			want = append(want, strconv.FormatInt(i, 10))
		}
	}
	slices.Sort(want)
	sinks := map[string]func(env *weir.Env, topic string, opts ...Option){
		"exactly-once": func(env *weir.Env, topic string, opts ...Option) {
			s := weir.FromSource(env, datagen.New(func(i int64) int64 { return i }, datagen.WithCount(n))).UID("gen")
			weir.SinkToTransactional(s, ExactlyOnce(b.addrs, topic, serializeNumber, append(opts, WithTransactionalIDPrefix("ser-"+topic))...)).UID("kafka")
		},
		"at-least-once": func(env *weir.Env, topic string, opts ...Option) {
			s := weir.FromSource(env, datagen.New(func(i int64) int64 { return i }, datagen.WithCount(n))).UID("gen")
			weir.SinkTo(s, AtLeastOnce(b.addrs, topic, serializeNumber, opts...)).UID("kafka")
		},
	}
	for name, sink := range sinks {
		t.Run(name, func(t *testing.T) {
			topic := b.topic(t, 1)
			res := newJob(t, 1).run(t, func(env *weir.Env) { sink(env, topic) })
			if !errors.Is(res.err, errOdd) || !strings.Contains(res.err.Error(), `kafka sink "kafka": serialize record 7 of a batch of`) ||
				!strings.Contains(res.err.Error(), fmt.Sprintf("for topic %q", topic)) || res.restarts != 0 {
				t.Fatalf("err %v after %d restarts, want a failure for good naming the sink, the topic and record 7 of its batch", res.err, res.restarts)
			}
			topic = b.topic(t, 1)
			reg := prometheus.NewRegistry()
			res = newJob(t, 1).run(t, func(env *weir.Env) { sink(env, topic, WithSkipSerializeErrors(), WithMetrics(reg)) })
			if res.err != nil {
				t.Fatal(res.err)
			}
			got := sorted(b.readCommitted(t, topic))
			if name == "at-least-once" {
				got = slices.Compact(got) // no failure here, but the guarantee allows duplicates
			}
			if !slices.Equal(got, want) {
				t.Fatalf("topic has %d records, want the %d serializable values exactly (%s)", len(got), len(want), firstDiff(want, got))
			}
			if log := res.log.String(); !strings.Contains(log, "skipped a record the serializer rejected") || !strings.Contains(log, "index=7") {
				t.Errorf("no WARN naming the skipped record's index in the log:\n%.2000s", log)
			}
			if got := counterSum(t, reg, "weir_kafka_sink_skipped_records_total"); got != float64(n-len(want)) {
				t.Errorf("weir_kafka_sink_skipped_records_total = %v, want %d", got, n-len(want))
			}
		})
	}
}
