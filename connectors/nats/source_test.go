package nats

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
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobstatus"
)

// TestSourceExactlyOnceUnderFaults reads a stream with three subjects,
// one split each, into the exactly-once file sink with failures at every
// fault point, at parallelism 1 and 2: the committed lines are exactly
// the stream's messages, so every restore continued right after the
// sequence its checkpoint held.
func TestSourceExactlyOnceUnderFaults(t *testing.T) {
	const per = 4000
	ts := newServer(t)
	_, js := ts.js(t)
	createStream(t, js, jetstream.StreamConfig{Name: "IN", Subjects: []string{"in.>"}})
	var want []string
	for _, sub := range []string{"a", "b", "c"} {
		publishN(t, js, "in."+sub, sub+"-", 0, per)
		want = append(want, payloads(sub+"-", 0, per)...)
	}
	slices.Sort(want)
	fromCheckpoint := 0
	for p := 1; p <= 2; p++ {
		t.Run(fmt.Sprintf("p%d", p), func(t *testing.T) {
			j := newJob(t, p)
			j.plan = onePerAttempt(3, int64(p), 3*per, faults.AllPoints()...)
			out := filepath.Join(t.TempDir(), "out")
			res := j.run(t, func(env *weir.Env) {
				s := weir.FromSource(env, Source(ts.url, "IN", stringValue, WithBounded(), WithSubjects("in.a", "in.b", "in.c"))).UID("nats")
				weir.SinkToTransactional(s, file.ExactlyOnce(out, appendString)).UID("files")
			})
			if res.err != nil {
				t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
			}
			if fired := res.inj.Fired(); fired != 3 {
				t.Errorf("%d failures fired, want 3: %v", fired, res.inj.Log())
			}
			got := readFiles(t, out)
			if !slices.Equal(got, want) {
				t.Fatalf("committed %d lines, want the %d messages exactly: %s", len(got), len(want), firstDiff(want, got))
			}
			restored := strings.Count(res.log.String(), "msg=restoring")
			fromCheckpoint += restored
			t.Logf("%d lines exact, %d restarts (%d from a checkpoint), %v", len(got), res.restarts, restored, res.elapsed)
		})
	}
	if !t.Failed() && fromCheckpoint < 1 {
		t.Errorf("no restore came from a checkpoint; the test proves little about positions")
	}
}

// TestSourceResumesAfterSequence runs a bounded job over the first 500
// messages to its end (its last checkpoint kept), publishes 300 more and
// runs the job again from that checkpoint: the second run reads exactly
// messages 500 to 799 (the sink's output then holds each message once),
// so it continued at the checkpoint's sequence + 1.
func TestSourceResumesAfterSequence(t *testing.T) {
	ts := newServer(t)
	_, js := ts.js(t)
	createStream(t, js, jetstream.StreamConfig{Name: "SEQ", Subjects: []string{"seq"}})
	publishN(t, js, "seq", "m", 0, 500)
	j := newJob(t, 1)
	out := filepath.Join(t.TempDir(), "out")
	run := func() []string {
		res := j.run(t, func(env *weir.Env) {
			s := weir.FromSource(env, Source(ts.url, "SEQ", stringValue, WithBounded())).UID("nats")
			weir.SinkToTransactional(s, file.ExactlyOnce(out, appendString)).UID("files")
		})
		if res.err != nil {
			t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
		}
		return readFiles(t, out)
	}
	if got, want := run(), payloads("m", 0, 500); !slices.Equal(got, want) {
		t.Fatalf("first run: %s", firstDiff(want, got))
	}
	publishN(t, js, "seq", "m", 500, 800)
	if got, want := run(), payloads("m", 0, 800); !slices.Equal(got, want) {
		t.Fatalf("after the second run the output holds %d messages, want each of the 800 once (the second run reading exactly sequences 501..800): %s", len(got), firstDiff(want, got))
	}
}

// TestSourceWorkQueue: messages of a work-queue stream are removed only
// once a checkpoint covering them completed. A run without checkpoints
// reads everything and removes nothing; the next run reads it all again,
// and with checkpoints the stream empties.
func TestSourceWorkQueue(t *testing.T) {
	const n = 2000
	ts := newServer(t)
	_, js := ts.js(t)
	str := createStream(t, js, jetstream.StreamConfig{Name: "WQ", Subjects: []string{"wq.>"}, Retention: jetstream.WorkQueuePolicy})
	publishN(t, js, "wq.x", "w", 0, n)
	msgs := func() uint64 {
		info, err := str.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Msgs
	}
	j := newJob(t, 1)
	j.interval = "1h" // no checkpoint completes
	got := runUntil(t, j, ts.url, "WQ", func(read int) bool { return read >= n })
	if want := payloads("w", 0, n); !slices.Equal(got, want) {
		t.Fatalf("first run: %s", firstDiff(want, got))
	}
	if m := msgs(); m != n {
		t.Fatalf("after a run without a completed checkpoint the stream holds %d messages, want all %d", m, n)
	}
	j = newJob(t, 1)
	j.interval = "20ms"
	got = runUntil(t, j, ts.url, "WQ", func(read int) bool { return read >= n && msgs() == 0 })
	if want := payloads("w", 0, n); !slices.Equal(got, want) {
		t.Fatalf("second run: %s", firstDiff(want, got))
	}
	if m := msgs(); m != 0 {
		t.Fatalf("stream holds %d messages after checkpoints completed, want 0", m)
	}
}

// runUntil runs a job reading stream, unbounded, into memory until stop
// says so, and returns what it read, sorted.
func runUntil(t *testing.T, j *job, url, stream string, stop func(read int) bool) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j.ctx = ctx
	var mu sync.Mutex
	var got []string
	watch := make(chan struct{})
	go func() {
		defer close(watch)
		for ctx.Err() == nil {
			mu.Lock()
			read := len(got)
			mu.Unlock()
			if stop(read) {
				cancel()
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	res := j.run(t, func(env *weir.Env) {
		s := weir.FromSource(env, Source(url, stream, stringValue)).UID("nats")
		weir.SinkTo(s, func() weir.Sink[string] {
			return &funcSink{write: func(b []string) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, b...)
			}}
		})
	})
	cancel()
	<-watch
	if res.err != nil && !errors.Is(res.err, context.Canceled) {
		t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(got)
	return got
}

// TestSourceInterest: an interest-retention stream keeps its messages
// until a checkpoint covering them completes, through the source's
// durable consumer (a stream without interest would drop them at once).
// A run without checkpoints reads everything and acknowledges nothing;
// the next run creates its own durable at its position, deletes the
// older one without the interest lapsing, reads it all again, and with
// checkpoints the stream empties.
func TestSourceInterest(t *testing.T) {
	const n = 2000
	ts := newServer(t)
	_, js := ts.js(t)
	str := createStream(t, js, jetstream.StreamConfig{Name: "INT", Subjects: []string{"int.>"}, Retention: jetstream.InterestPolicy})
	state := func() (msgs uint64, consumers int) {
		info, err := str.Info(context.Background())
		if err != nil {
			t.Error(err) // also called by runUntil's watcher
			return 0, 0
		}
		return info.State.Msgs, info.State.Consumers
	}
	j := newJob(t, 1)
	j.interval = "1h" // no checkpoint completes
	published := false
	got := runUntil(t, j, ts.url, "INT", func(read int) bool {
		if !published {
			if _, c := state(); c == 0 {
				return false // the source's durable is not there yet
			}
			publishN(t, js, "int.x", "i", 0, n)
			published = true
		}
		return read >= n
	})
	if want := payloads("i", 0, n); !slices.Equal(got, want) {
		t.Fatalf("first run: %s", firstDiff(want, got))
	}
	if m, c := state(); m != n || c != 1 {
		t.Fatalf("after a run without a completed checkpoint the stream holds %d messages and %d consumers, want %d and 1", m, c, n)
	}
	j = newJob(t, 1)
	got = runUntil(t, j, ts.url, "INT", func(read int) bool {
		m, _ := state()
		return read >= n && m == 0
	})
	if want := payloads("i", 0, n); !slices.Equal(got, want) {
		t.Fatalf("second run: %s", firstDiff(want, got))
	}
	if m, c := state(); m != 0 || c != 1 {
		t.Fatalf("after checkpoints completed the stream holds %d messages and %d consumers, want 0 and 1", m, c)
	}
}

// funcSink hands each batch to write.
type funcSink struct{ write func([]string) }

func (s *funcSink) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (s *funcSink) Write(_ context.Context, b []string) error {
	s.write(slices.Clone(b))
	return nil
}
func (s *funcSink) Flush(context.Context) error { return nil }
func (s *funcSink) Close(context.Context) error { return nil }

// TestSourceBadRecords: a message the deserializer rejects fails the job
// for good, naming stream, subject and sequence; with WithSkipBadRecords
// it is skipped and counted, in the metric too.
func TestSourceBadRecords(t *testing.T) {
	ts := newServer(t)
	_, js := ts.js(t)
	createStream(t, js, jetstream.StreamConfig{Name: "BAD", Subjects: []string{"bad.>"}})
	for _, v := range []string{"1", "two", "3"} {
		if _, err := js.Publish(context.Background(), "bad.n", []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	errBad := errors.New("not a number")
	parse := func(m *Msg) (string, error) {
		if _, err := strconv.Atoi(string(m.Data)); err != nil {
			return "", errBad
		}
		return string(m.Data), nil
	}
	run := func(opts ...Option) (outcome, []string) {
		out := filepath.Join(t.TempDir(), "out")
		j := newJob(t, 1)
		res := j.run(t, func(env *weir.Env) {
			s := weir.FromSource(env, Source(ts.url, "BAD", parse, append(opts, WithBounded())...)).UID("nats")
			weir.SinkToTransactional(s, file.ExactlyOnce(out, appendString)).UID("files")
		})
		return res, readFiles(t, out)
	}
	res, _ := run()
	if !errors.Is(res.err, errBad) || !strings.Contains(res.err.Error(), `stream "BAD" subject "bad.n" sequence 2`) {
		t.Fatalf("default = %v, want the deserialize error naming stream, subject and sequence 2", res.err)
	}
	if res.restarts != 0 {
		t.Errorf("restarts = %d, want 0: a bad record is not cured by a restart", res.restarts)
	}
	reg := prometheus.NewRegistry()
	res, lines := run(WithSkipBadRecords(), WithMetrics(reg))
	if res.err != nil {
		t.Fatal(res.err)
	}
	if !slices.Equal(lines, []string{"1", "3"}) {
		t.Fatalf("lines %q, want [1 3]", lines)
	}
	if !strings.Contains(res.log.String(), "skipped a message") || !strings.Contains(res.log.String(), "sequence=2") {
		t.Errorf("no WARN naming the skipped message in the log:\n%s", res.log)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	skipped := 0.0
	for _, mf := range mfs {
		if mf.GetName() == "weir_nats_source_skipped_records_total" {
			for _, m := range mf.GetMetric() {
				skipped += m.GetCounter().GetValue()
			}
		}
	}
	if skipped != 1 {
		t.Errorf("weir_nats_source_skipped_records_total = %v, want 1", skipped)
	}
}

// TestSourceLagMetric reads a stream of 3000 messages and watches the
// consumer lag gauge from the sink: behind at the first batch, 0 at the
// last.
func TestSourceLagMetric(t *testing.T) {
	const n = 3000
	ts := newServer(t)
	_, js := ts.js(t)
	createStream(t, js, jetstream.StreamConfig{Name: "LAG", Subjects: []string{"lag"}})
	publishN(t, js, "lag", "l", 0, n)
	reg := prometheus.NewRegistry()
	lag := func() float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Error(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "weir_nats_source_consumer_lag" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		return -1
	}
	var mu sync.Mutex
	var read int
	var first, last, firstPending, lastPending float64
	var env *weir.Env
	// pending is the same figure as the task publishes it to the
	// JobManager (weir.PendingRecordsGauge): the autoscaler's lag.
	pending := func() float64 {
		for _, ts := range hooks.Plan(env).Status.Tasks() {
			if v, ok := jobstatus.Sum(ts.Gauges, weir.PendingRecordsGauge); ok {
				return v
			}
		}
		return -1
	}
	j := newJob(t, 1)
	res := j.run(t, func(e *weir.Env) {
		env = e
		s := weir.FromSource(env, Source(ts.url, "LAG", stringValue, WithBounded(), WithMetrics(reg))).UID("nats")
		weir.SinkTo(s, func() weir.Sink[string] {
			return &funcSink{write: func(b []string) {
				mu.Lock()
				defer mu.Unlock()
				if read == 0 {
					first, firstPending = lag(), pending()
				}
				read += len(b)
				if read == n {
					last, lastPending = lag(), pending()
				}
			}}
		})
	})
	if res.err != nil {
		t.Fatalf("Execute: %v", res.err)
	}
	if read != n || first <= 0 || last != 0 {
		t.Fatalf("read %d of %d; lag at the first batch %v (want > 0), at the last %v (want 0)", read, n, first, last)
	}
	if firstPending != first || lastPending != 0 {
		t.Errorf("pending records published to the JobManager: %v at the first batch, %v at the last; want %v and 0, as the metric", firstPending, lastPending, first)
	}
}

// TestSourceServerRestart stops the NATS server (file storage) for 400 ms
// while the source reads a stream into the exactly-once file sink: the
// ordered consumer is recreated at its position or the job restarts from
// a checkpoint, and the committed lines are exactly the stream's messages.
func TestSourceServerRestart(t *testing.T) {
	const n = 15_000
	ts := newServer(t)
	_, js := ts.js(t)
	createStream(t, js, jetstream.StreamConfig{Name: "RIN", Subjects: []string{"rin"}})
	publishN(t, js, "rin", "r", 0, n)
	j := newJob(t, 1)
	j.extra = map[string]string{config.FixedDelayDelay: "50ms"}
	var read atomic.Int64
	stopped := make(chan bool, 1)
	go func() {
		deadline := time.Now().Add(time.Minute)
		for read.Load() < n/4 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		ts.stop()
		time.Sleep(400 * time.Millisecond)
		ts.start()
		stopped <- read.Load() < n
	}()
	out := filepath.Join(t.TempDir(), "out")
	slow := func(m *Msg) (string, error) {
		// About 10 µs a message: the read lasts long enough for the
		// outage to land in it.
		if read.Add(1)%100 == 0 {
			time.Sleep(time.Millisecond)
		}
		return string(m.Data), nil
	}
	res := j.run(t, func(env *weir.Env) {
		s := weir.FromSource(env, Source(ts.url, "RIN", slow, WithBounded())).UID("nats")
		weir.SinkToTransactional(s, file.ExactlyOnce(out, appendString)).UID("files")
	})
	mid := <-stopped
	if res.err != nil {
		t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
	}
	if !mid {
		t.Errorf("the job had read everything before the server stopped")
	}
	if got, want := readFiles(t, out), payloads("r", 0, n); !slices.Equal(got, want) {
		t.Fatalf("committed %d lines, want the %d messages exactly: %s", len(got), len(want), firstDiff(want, got))
	}
	t.Logf("exact after a server stop mid-read; %d job restarts, %v", res.restarts, res.elapsed)
}
