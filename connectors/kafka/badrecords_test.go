package kafka

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/faults"
)

var errNotANumber = errors.New("not a number")

// parseNumber is a deserializer that rejects values that are not numbers.
func parseNumber(r *kgo.Record) (string, error) {
	if _, err := strconv.Atoi(string(r.Value)); err != nil {
		return "", errNotANumber
	}
	return string(r.Value), nil
}

// badLine is how the tests write a bad record: where it was and what.
func badLine(b weir.BadRecord) string {
	return fmt.Sprintf("%s/%d/%d %s: %s", b.Topic, b.Partition, b.Offset, b.Value, b.Err)
}

// TestSourceBadRecordsToSideOutput reads a 3-partition topic where every
// seventh record does not deserialize, with failures injected at every
// fault point, at parallelism 2: the main output is exactly the good
// records and the side output exactly the bad ones, each once, with topic,
// partition, offset, bytes and error — the side output is as exact as the
// main one because both leave the source in the step that advances its
// offset.
func TestSourceBadRecordsToSideOutput(t *testing.T) {
	const n = 20_000
	b := newBroker(t)
	topic := b.topic(t, 3)
	cl := b.client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var recs []*kgo.Record
	for i := range n {
		v := strconv.Itoa(i)
		if i%7 == 3 {
			v = "bad-" + v
		}
		recs = append(recs, &kgo.Record{Value: []byte(v)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var wantGood, wantBad []string
	for _, r := range recs {
		if _, err := parseNumber(r); err != nil {
			wantBad = append(wantBad, badLine(weir.BadRecord{Topic: topic, Partition: r.Partition, Offset: r.Offset, Value: r.Value, Err: err.Error()}))
		} else {
			wantGood = append(wantGood, string(r.Value))
		}
	}
	slices.Sort(wantGood)
	slices.Sort(wantBad)
	tag := weir.NewOutputTag[weir.BadRecord]("bad-records")
	j := newJob(t, 2)
	j.plan = onePerAttempt(3, 5, n, faults.AllPoints()...)
	out, bad := filepath.Join(t.TempDir(), "out"), filepath.Join(t.TempDir(), "bad")
	res := j.run(t, func(env *weir.Env) {
		s := weir.FromSource(env, Source(b.addrs, topic, parseNumber, WithBadRecordsTo(tag), WithBounded())).UID("kafka")
		weir.SinkToTransactional(s, file.ExactlyOnce(out, appendString)).UID("files")
		lines := weir.Map(weir.SideOutput(s, tag), badLine)
		weir.SinkToTransactional(lines, file.ExactlyOnce(bad, appendString)).UID("bad-files")
	})
	if res.err != nil {
		t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
	}
	if fired := res.inj.Fired(); fired != 3 || res.restarts < 2 {
		t.Errorf("%d failures fired and %d restarts; want 3 fired and at least 2 restarts: %v", fired, res.restarts, res.inj.Log())
	}
	if got := readFiles(t, out); !slices.Equal(got, wantGood) {
		t.Fatalf("main output: %d lines, want the %d good records exactly (%s)", len(got), len(wantGood), firstDiff(wantGood, got))
	}
	if got := readFiles(t, bad); !slices.Equal(got, wantBad) {
		t.Fatalf("side output: %d lines, want the %d bad records exactly (%s)", len(got), len(wantBad), firstDiff(wantBad, got))
	}
	t.Logf("%d good and %d bad records exact, %d restarts (%d from a checkpoint), %v",
		len(wantGood), len(wantBad), res.restarts, strings.Count(res.log.String(), "msg=restoring"), res.elapsed)
}

// TestSourceBadRecordsOptions: a side output nobody reads is refused at
// open (the bad records would be lost), and WithSkipBadRecords skips,
// logs the position at WARN and counts in the metric.
func TestSourceBadRecordsOptions(t *testing.T) {
	b := newBroker(t)
	topic := b.topic(t, 1)
	cl := b.client(t, kgo.DefaultProduceTopic(topic))
	for _, v := range []string{"1", "two", "3"} {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	run := func(opts ...Option) (outcome, []string) {
		out := filepath.Join(t.TempDir(), "out")
		res := newJob(t, 1).run(t, func(env *weir.Env) {
			s := weir.FromSource(env, Source(b.addrs, topic, parseNumber, append(opts, WithBounded())...)).UID("kafka")
			weir.SinkToTransactional(s, file.ExactlyOnce(out, appendString)).UID("files")
		})
		if res.err != nil {
			return res, nil
		}
		return res, readFiles(t, out)
	}
	res, _ := run(WithBadRecordsTo(weir.NewOutputTag[weir.BadRecord]("unread")))
	if res.err == nil || !strings.Contains(res.err.Error(), `side output "unread", which the job does not read`) || res.restarts != 0 {
		t.Fatalf("unread side output: err %v after %d restarts, want a refusal naming the side output and no restart", res.err, res.restarts)
	}
	reg := prometheus.NewRegistry()
	res, lines := run(WithSkipBadRecords(), WithMetrics(reg))
	if res.err != nil {
		t.Fatal(res.err)
	}
	if !slices.Equal(lines, []string{"1", "3"}) {
		t.Fatalf("lines %q, want [1 3]", lines)
	}
	if log := res.log.String(); !strings.Contains(log, "skipped a record") || !strings.Contains(log, "partition=0 offset=1") {
		t.Errorf("no WARN naming the skipped record's partition and offset in the log:\n%s", log)
	}
	if got := counterSum(t, reg, "weir_kafka_source_skipped_records_total"); got != 1 {
		t.Errorf("weir_kafka_source_skipped_records_total = %v, want 1", got)
	}
}

// counterSum sums the counters named name in reg.
func counterSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
