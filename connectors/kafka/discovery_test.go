package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/weirstream/weir"
)

// createPartitions raises topic's partition count to total.
func (b *broker) createPartitions(t *testing.T, topic string, total int32) {
	t.Helper()
	req := kmsg.NewPtrCreatePartitionsRequest()
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, total
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10_000
	resp, err := req.RequestWith(context.Background(), b.client(t))
	if err != nil {
		t.Fatalf("create partitions of %s: %v", topic, err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create partitions of %s: %v", topic, err)
	}
}

// produceTo writes "<partition>-<i>" for i in [from, to) to each of parts,
// without a transaction, and returns the values.
func (b *broker) produceTo(t *testing.T, topic string, parts []int32, from, to int) []string {
	t.Helper()
	cl := b.client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	var vals []string
	for _, p := range parts {
		for i := from; i < to; i++ {
			v := fmt.Sprintf("%d-%d", p, i)
			vals = append(vals, v)
			recs = append(recs, &kgo.Record{Partition: p, Value: []byte(v)})
		}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
	return vals
}

// testClock is a clock the test moves.
type testClock struct{ ns atomic.Int64 }

func (c *testClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *testClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// tally counts the values a job read, and signals when it read a number.
type tally struct {
	mu     sync.Mutex
	seen   map[string]int
	n      int
	target int
	hit    chan struct{}
}

func newTally() *tally { return &tally{seen: map[string]int{}} }

func (c *tally) add(v string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[v]++
	c.n++
	if c.hit != nil && c.n >= c.target {
		close(c.hit)
		c.hit = nil
	}
}

func (c *tally) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// reached returns a channel closed once n values were read.
func (c *tally) reached(n int) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan struct{})
	if c.n >= n {
		close(ch)
		return ch
	}
	c.target, c.hit = n, ch
	return ch
}

// exactlyOnce fails unless the values read are want, each once.
func (c *tally) exactlyOnce(t *testing.T, want []string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var dup []string
	for v, k := range c.seen {
		if k != 1 {
			dup = append(dup, v)
		}
	}
	if got := slices.Sorted(maps.Keys(c.seen)); len(dup) > 0 || !slices.Equal(got, sorted(want)) {
		t.Fatalf("read %d values (%d distinct), want the %d written exactly once; read more than once: %.10q; %s", c.n, len(c.seen), len(want), dup, firstDiff(sorted(want), got))
	}
}

type discard[T any] struct{}

func (discard[T]) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (discard[T]) Write(context.Context, []T) error                 { return nil }
func (discard[T]) Flush(context.Context) error                      { return nil }
func (discard[T]) Close(context.Context) error                      { return nil }

// TestSourceDiscoversPartitions runs an unbounded job at parallelism 2 on
// a 2-partition topic, adds 2 partitions and writes to them, and only then
// lets discovery run (its clock is the test's): the new partitions are
// read from their start, by their owners, and every record of the topic
// exactly once, including records written after discovery.
func TestSourceDiscoversPartitions(t *testing.T) {
	b := newBroker(t)
	topic := b.topic(t, 2)
	want := b.produceTo(t, topic, []int32{0, 1}, 0, 500)
	clock := &testClock{}
	clock.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	seen := newTally()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	j := newJob(t, 2)
	j.restartNone, j.ctx = true, ctx // no replays: every read is a first read
	done := make(chan outcome, 1)
	go func() {
		done <- j.run(t, func(env *weir.Env) {
			s := weir.FromSource(env, Source(b.addrs, topic, func(r *kgo.Record) (string, error) {
				seen.add(string(r.Value))
				return string(r.Value), nil
			}, WithPartitionDiscoveryInterval(time.Minute), withClock(clock.now))).UID("kafka")
			weir.SinkTo(s, func() weir.Sink[string] { return discard[string]{} })
		})
	}()
	wait := func(n int) {
		t.Helper()
		select {
		case <-seen.reached(n):
		case res := <-done:
			t.Fatalf("job ended (%v) after %d of %d records\nlog:\n%s", res.err, seen.count(), n, res.log)
		case <-ctx.Done():
			t.Fatalf("read %d records, want %d", seen.count(), n)
		}
	}
	wait(len(want))
	b.createPartitions(t, topic, 4)
	want = append(want, b.produceTo(t, topic, []int32{2, 3}, 0, 300)...) // before discovery
	clock.advance(time.Minute)
	want = append(want, b.produceTo(t, topic, []int32{0, 1, 2, 3}, 1000, 1100)...)
	wait(len(want))
	cancel()
	res := <-done
	if res.err != nil && !errors.Is(res.err, context.Canceled) {
		t.Fatalf("job: %v\nlog:\n%s", res.err, res.log)
	}
	seen.exactlyOnce(t, want)
	if got := res.log.String(); !containsAll(got, "discovered partitions", "reading=[2]", "reading=[3]") {
		t.Errorf("want subtask 0 to read partition 2 and subtask 1 partition 3; log:\n%s", got)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
