package kafka

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
)

// fillTopic writes the values "0".."n-1" to topic through transactions of
// 500 records, round-robin over the partitions, and after every committed
// transaction an aborted one whose records ("aborted-…") a read_committed
// reader must skip. It returns the committed values.
func fillTopic(t *testing.T, b *broker, topic string, n int) []string {
	t.Helper()
	cl := b.client(t, kgo.TransactionalID("fill-"+topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.DefaultProduceTopic(topic))
	ctx := context.Background()
	var want []string
	produce := func(vals []string, commit kgo.TransactionEndTry) {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			cl.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i += 500 {
		var vals []string
		for v := i; v < min(i+500, n); v++ {
			vals = append(vals, strconv.Itoa(v))
		}
		produce(vals, kgo.TryCommit)
		want = append(want, vals...)
		produce([]string{fmt.Sprintf("aborted-%d", i), fmt.Sprintf("aborted-%d-b", i)}, kgo.TryAbort)
	}
	return want
}

func stringValue(r *kgo.Record) (string, error) { return string(r.Value), nil }

func appendString(v string, dst []byte) []byte { return append(dst, v...) }

// readFiles returns the committed lines under dir, sorted.
func readFiles(t *testing.T, dir string) []string {
	t.Helper()
	lines, err := file.ReadCommitted(dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return lines
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

// TestSourceExactlyOnceUnderFaults reads a 4-partition topic (with aborted
// transactions between the committed ones) into the exactly-once file
// sink, with failures at every fault point, at parallelism 1 to 3: the
// committed lines are exactly the committed records, so the offsets were
// restored exactly.
func TestSourceExactlyOnceUnderFaults(t *testing.T) {
	const n = 60_000
	b := newBroker(t)
	topic := b.topic(t, 4)
	want := sorted(fillTopic(t, b, topic, n))
	fromCheckpoint := 0
	defer func() {
		// Which failure lands after a completed checkpoint depends on
		// timing; when test packages run in parallel, fewer do.
		if !t.Failed() && fromCheckpoint < 3 {
			t.Errorf("only %d of 12 restores came from a checkpoint (want at least 3); the test proves little about offsets", fromCheckpoint)
		}
	}()
	for p := 1; p <= 3; p++ {
		t.Run(fmt.Sprintf("p%d", p), func(t *testing.T) {
			j := newJob(t, p)
			j.plan = onePerAttempt(4, int64(p), n, faults.AllPoints()...)
			out := filepath.Join(t.TempDir(), "out")
			res := j.run(t, func(env *weir.Env) {
				s := weir.FromSource(env, Source(b.addrs, topic, stringValue, WithBounded())).UID("kafka")
				weir.SinkToTransactional(s, file.ExactlyOnce(out, appendString)).UID("files")
			})
			if res.err != nil {
				t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
			}
			// Each of the 4 failures fires and is recovered from. Two that
			// fire in one attempt (at the same commit, in two regions) cost
			// one restart: the first restarts every region, the second
			// finds its task already stopping.
			if fired := res.inj.Fired(); fired != 4 || res.restarts < 3 || res.restarts > 4 {
				t.Errorf("%d failures fired and %d restarts; want 4 fired and 3 or 4 restarts: %v", fired, res.restarts, res.inj.Log())
			}
			got := readFiles(t, out)
			if !slices.Equal(got, want) {
				t.Fatalf("committed %d lines, want the %d committed records exactly (%s)", len(got), len(want), firstDiff(want, got))
			}
			restored := strings.Count(res.log.String(), "msg=restoring")
			fromCheckpoint += restored
			t.Logf("%d lines exact, %d restarts (%d from a checkpoint), %v", len(got), res.restarts, restored, res.elapsed)
		})
	}
}

// TestSourceRescale stops a job at parallelism 2 once a checkpoint
// completed (its deserializer fails, restarts are off), resumes it from its
// last checkpoint at parallelism 3 and stops it again, then runs it at
// parallelism 1 to the end: the partitions' offsets travel with them, and
// the lines of the three runs together are exactly the committed records.
func TestSourceRescale(t *testing.T) {
	const n = 150_000
	b := newBroker(t)
	topic := b.topic(t, 5)
	want := sorted(fillTopic(t, b, topic, n))
	out := filepath.Join(t.TempDir(), "out")
	j := newJob(t, 2)
	errStop := errors.New("stop")
	// stopAt returns a build whose deserializer fails once the run has
	// completed a checkpoint (p=2) or read some records (p=3: its sources
	// may finish their partitions unevenly, and the runtime takes no
	// checkpoint after a source finished, so a checkpoint is not assured).
	build := func(stop string) func(env *weir.Env) {
		return func(env *weir.Env) {
			var read atomic.Int64
			de := func(r *kgo.Record) (string, error) {
				c := read.Add(1)
				switch {
				// After half the records the run stops even without a
				// checkpoint (a fast machine may get that far before the
				// first one): the next run then starts fresh, which the
				// exactness check covers as well.
				case stop == "checkpoint" && (hooks.Plan(env).Status.CompletedCheckpoints.Load() >= 1 || c > n/2),
					stop == "records" && c > n/10:
					return "", errStop
				}
				return string(r.Value), nil
			}
			s := weir.FromSource(env, Source(b.addrs, topic, de, WithBounded())).UID("kafka")
			weir.SinkToTransactional(s, file.ExactlyOnce(out, appendString)).UID("files")
		}
	}
	j.restartNone = true
	if res := j.run(t, build("checkpoint")); !errors.Is(res.err, errStop) {
		t.Fatalf("run at parallelism 2 = %v, want it stopped after its first checkpoint (too fast a machine?)", res.err)
	}
	j.parallelism = 3
	res := j.run(t, build("records"))
	if !errors.Is(res.err, errStop) {
		t.Fatalf("run at parallelism 3 = %v, want it stopped", res.err)
	}
	t.Logf("parallelism 3 completed %d checkpoints", hooks.Plan(res.env).Status.CompletedCheckpoints.Load())
	j.parallelism, j.restartNone = 1, false
	res = j.run(t, build(""))
	if res.err != nil {
		t.Fatalf("last run: %v\nlog:\n%s", res.err, res.log)
	}
	if !strings.Contains(res.log.String(), "msg=restoring") {
		t.Fatal("last run did not restore a checkpoint")
	}
	if got := readFiles(t, out); !slices.Equal(got, want) {
		t.Fatalf("committed %d lines, want %d exactly (%s)", len(got), len(want), firstDiff(want, got))
	}
}

// TestSourceDeserializeErrors: a record the deserializer rejects fails the
// job for good, naming its offset, or goes to the dead-letter callback,
// never silently away.
func TestSourceDeserializeErrors(t *testing.T) {
	b := newBroker(t)
	topic := b.topic(t, 1)
	cl := b.client(t, kgo.DefaultProduceTopic(topic))
	for _, v := range []string{"1", "two", "3"} {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	errBad := errors.New("not a number")
	parse := func(r *kgo.Record) (string, error) {
		if _, err := strconv.Atoi(string(r.Value)); err != nil {
			return "", errBad
		}
		return string(r.Value), nil
	}
	run := func(opts ...Option) (outcome, []string) {
		out := filepath.Join(t.TempDir(), "out")
		j := newJob(t, 1)
		res := j.run(t, func(env *weir.Env) {
			s := weir.FromSource(env, Source(b.addrs, topic, parse, append(opts, WithBounded())...)).UID("kafka")
			weir.SinkToTransactional(s, file.ExactlyOnce(out, appendString)).UID("files")
		})
		return res, readFiles(t, out)
	}
	res, _ := run()
	if !errors.Is(res.err, errBad) || !strings.Contains(res.err.Error(), "partition 0 offset 1") {
		t.Fatalf("default = %v, want the deserialize error naming partition 0 offset 1", res.err)
	}
	if res.restarts != 0 {
		t.Errorf("restarts = %d, want 0: a bad record is not cured by a restart", res.restarts)
	}
	var mu sync.Mutex
	var dead []string
	res, lines := run(WithDeserializeErrorHandler(func(r *kgo.Record, err error) error {
		mu.Lock()
		defer mu.Unlock()
		dead = append(dead, fmt.Sprintf("%d:%s:%v", r.Offset, r.Value, err))
		return nil
	}))
	if res.err != nil {
		t.Fatal(res.err)
	}
	if !slices.Equal(lines, []string{"1", "3"}) || !slices.Equal(dead, []string{"1:two:not a number"}) {
		t.Fatalf("lines %q dead letters %q, want [1 3] and [1:two:not a number]", lines, dead)
	}
}

// firstDiff describes how two sorted line lists differ.
func firstDiff(want, got []string) string {
	count := map[string]int{}
	for _, l := range want {
		count[l]++
	}
	for _, l := range got {
		count[l]--
	}
	var missing, extra int
	var ex []string
	for l, c := range count {
		if c > 0 {
			missing += c
		}
		if c < 0 {
			extra -= c
			if len(ex) < 5 {
				ex = append(ex, l)
			}
		}
	}
	return fmt.Sprintf("%d missing, %d extra or duplicated, e.g. %q", missing, extra, ex)
}
