package kafka

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/runtime"
)

// The tests in this file need what only a real Apache Kafka broker has
// (its process can be killed, its settings are checked): they run against
// the shared broker .ci/kafka.sh starts or one of their own, and skip with
// a message naming the script where there is none. The rest of the suite
// runs against kfake, and a second time against the real broker in CI.

// realBroker is the shared real broker as a test broker.
func realBroker(t *testing.T) *broker {
	t.Helper()
	return &broker{addrs: kafkatest.Shared(t), real: true}
}

// TestRealBrokerRefusesLongTransactionTimeout (issue: transaction.max.timeout.ms
// on the broker smaller than weir's transaction timeout): the broker's
// default limit is 15 min, the sink asks for 20; the job fails at once, not
// in a restart loop, with an error that names both settings and their
// values.
func TestRealBrokerRefusesLongTransactionTimeout(t *testing.T) {
	b := realBroker(t)
	topic := b.topic(t, 1)
	j := newJob(t, 1)
	res := j.run(t, func(env *weir.Env) {
		s := weir.FromSource(env, datagen.New(func(i int64) string { return strconv.FormatInt(i, 10) }, datagen.WithCount(3))).UID("values")
		weir.SinkToTransactional(s, ExactlyOnce(b.addrs, topic, serializeString,
			WithTransactionalIDPrefix("maxtimeout-"+topic), WithTransactionTimeout(20*time.Minute))).UID("kafka")
	})
	if res.err == nil {
		t.Fatal("the job ran with a transaction timeout above the broker's transaction.max.timeout.ms")
	}
	if !runtime.IsUnrecoverable(res.err) {
		t.Errorf("error is not unrecoverable (a restart asks for the same timeout): %v", res.err)
	}
	if res.restarts != 0 {
		t.Errorf("%d restarts, want none", res.restarts)
	}
	for _, want := range []string{"kafka.WithTransactionTimeout is 20m0s", "transaction.max.timeout.ms (15m0s)", "INVALID_TRANSACTION_TIMEOUT"} {
		if !strings.Contains(res.err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, res.err)
		}
	}
	t.Logf("error: %v", res.err)
}

// throttle passes records on at most about perSec per second per subtask,
// so that a job is still running when a test breaks something under it.
func throttle(perSec int) func(string) string {
	var n atomic.Int64
	return func(v string) string {
		if n.Add(1)%100 == 0 {
			time.Sleep(time.Second * 100 / time.Duration(perSec))
		}
		return v
	}
}

// TestRealBrokerKilledMidRun: the only broker of the cluster is killed with
// SIGKILL while a Kafka → Kafka exactly-once job runs (after its first
// commit), and started again 3 s later on the same data. The job rides it
// out through restarts; a read_committed reader then sees exactly the
// input's committed records, and no transaction is left open.
func TestRealBrokerKilledMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills a Kafka broker of its own")
	}
	kb := kafkatest.Start(t)
	b := &broker{addrs: kb.Addrs(), real: true}
	in, out := b.topic(t, 4), b.topic(t, 2)
	const n = 20_000
	want := sorted(fillTopic(t, b, in, n))

	j := newJob(t, 2)
	j.interval = "100ms"
	j.extra = map[string]string{config.FixedDelayDelay: "500ms"}
	killed := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Wait for a committed transaction in the output, then kill.
		for ctx.Err() == nil {
			if lso := b.offsetsNoFail(out, true); slices.ContainsFunc(lso, func(o int64) bool { return o > 0 }) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		kb.Kill()
		t.Logf("broker killed at output offsets %v", b.offsetsNoFail(out, true))
		time.Sleep(3 * time.Second)
		killed <- kb.Restart()
	}()
	res := j.run(t, func(env *weir.Env) {
		s := weir.FromSource(env, Source(b.addrs, in, stringValue, WithBounded())).UID("kafka-in")
		s = weir.Map(s, throttle(4000)).UID("throttle")
		weir.SinkToTransactional(s, ExactlyOnce(b.addrs, out, serializeString,
			WithTransactionalIDPrefix("killed-"+out), WithCheckpointing(100*time.Millisecond, 10*time.Minute, 500*time.Millisecond))).UID("kafka-out")
	})
	select {
	case err := <-killed:
		if err != nil {
			t.Fatalf("restart the broker: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the broker was never killed and restarted: the job ended before its first commit?")
	}
	if res.err != nil {
		t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
	}
	if res.restarts == 0 {
		t.Logf("the job needed no restart: the clients waited the outage out")
	}
	got := sorted(b.readCommitted(t, out))
	if !slices.Equal(got, want) {
		t.Fatalf("read_committed output: %d records, want the input's %d exactly (%s)", len(got), len(want), firstDiff(want, got))
	}
	if open := b.openTransactions(t); slices.ContainsFunc(open, func(id string) bool { return strings.HasPrefix(id, "killed-") }) {
		t.Fatalf("transactions left open: %v", open)
	}
	t.Logf("%d records exact after a broker kill; %d restarts, %v", len(got), res.restarts, res.elapsed)
}

// offsetsNoFail is offsets for a goroutine that is not the test's: nil on
// any error (the broker may be down).
func (b *broker) offsetsNoFail(topic string, committed bool) []int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addrs...), kgo.RetryTimeout(time.Second))
	if err != nil {
		return nil
	}
	defer cl.Close()
	offs, err := listEnds(ctx, cl, topic, committed)
	if err != nil {
		return nil
	}
	return offs
}
