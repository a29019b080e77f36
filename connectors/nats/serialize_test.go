package nats

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
)

var errOdd = errors.New("odd multiple of 7")

// serializeNumber writes i, and rejects the values 7, 21, 35, …
func serializeNumber(i int64, m *natsgo.Msg) error {
	if i%14 == 7 {
		return errOdd
	}
	m.Data = strconv.AppendInt(nil, i, 10)
	return nil
}

// TestSinkSerializeErrors: a value the serializer rejects fails the job
// for good, naming the sink, the stream and the value's index in its
// batch; with WithSkipSerializeErrors the sinks (exactly-once and
// at-least-once) publish every other value, log the skipped ones at WARN
// and count them in the metric.
func TestSinkSerializeErrors(t *testing.T) {
	const n = 1000
	ts := newServer(t)
	_, js := ts.js(t)
	var want []string
	for i := range int64(n) {
		if i%14 != 7 {
			want = append(want, strconv.FormatInt(i, 10))
		}
	}
	slices.Sort(want)
	numbers := func(env *weir.Env) weir.Stream[int64] {
		return weir.FromSource(env, datagen.New(func(i int64) int64 { return i }, datagen.WithCount(n))).UID("gen")
	}
	sinks := map[string]func(env *weir.Env, stream string, opts ...Option){
		"exactly-once": func(env *weir.Env, stream string, opts ...Option) {
			weir.SinkToTransactional(numbers(env), ExactlyOnce(ts.url, stream, serializeNumber, opts...)).UID("nats")
		},
		"at-least-once": func(env *weir.Env, stream string, opts ...Option) {
			weir.SinkTo(numbers(env), AtLeastOnce(ts.url, stream, serializeNumber, opts...)).UID("nats")
		},
	}
	k := 0
	for name, sink := range sinks {
		t.Run(name, func(t *testing.T) {
			stream := func() string {
				k++
				s := fmt.Sprintf("SER%d", k)
				createStream(t, js, jetstream.StreamConfig{Name: s, Subjects: []string{"ser." + s}, Duplicates: 15 * time.Minute})
				return s
			}
			s := stream()
			res := newJob(t, 1).run(t, func(env *weir.Env) { sink(env, s) })
			if !errors.Is(res.err, errOdd) || !strings.Contains(res.err.Error(), `nats sink "nats": serialize record 7 of a batch of`) ||
				!strings.Contains(res.err.Error(), fmt.Sprintf("for stream %q", s)) || res.restarts != 0 {
				t.Fatalf("err %v after %d restarts, want a failure for good naming the sink, the stream and record 7 of its batch", res.err, res.restarts)
			}
			s = stream()
			reg := prometheus.NewRegistry()
			res = newJob(t, 1).run(t, func(env *weir.Env) { sink(env, s, WithSkipSerializeErrors(), WithMetrics(reg)) })
			if res.err != nil {
				t.Fatal(res.err)
			}
			got := readAll(t, js, s)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("stream has %d messages, want the %d serializable values exactly: %s", len(got), len(want), firstDiff(want, got))
			}
			if log := res.log.String(); !strings.Contains(log, "skipped a record the serializer rejected") || !strings.Contains(log, "index=7") {
				t.Errorf("no WARN naming the skipped record's index in the log:\n%.2000s", log)
			}
			skipped := 0.0
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				if mf.GetName() == "weir_nats_sink_skipped_records_total" {
					for _, m := range mf.GetMetric() {
						skipped += m.GetCounter().GetValue()
					}
				}
			}
			if skipped != float64(n-len(want)) {
				t.Errorf("weir_nats_sink_skipped_records_total = %v, want %d", skipped, n-len(want))
			}
		})
	}
}
