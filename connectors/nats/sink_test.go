package nats

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// demoLine is the demo's serializer: its output line as the payload.
func demoLine(r demo.Result, m *natsgo.Msg) error { m.Data = r.AppendLine(nil); return nil }

// sinkOpts are the exactly-once sink's options in these tests: the
// stream's duplicate window (createOutStream) covers the default retry
// window.
func outStream(t *testing.T, js jetstream.JetStream, name string, atomicBatches bool) {
	t.Helper()
	createStream(t, js, jetstream.StreamConfig{Name: name, Subjects: []string{"out." + name}, Duplicates: 15 * time.Minute, AllowAtomicPublish: atomicBatches})
}

// TestExactlyOnceDemo runs the demo job into a stream through the
// exactly-once sink with failures injected at each fault point
// separately, with atomic batches and with message-by-message commits:
// the stream holds exactly the failure-free output, as a multiset.
func TestExactlyOnceDemo(t *testing.T) {
	const (
		n        = 6_000
		k        = 97
		p        = 2
		failures = 3
	)
	want := demo.Expected(n, k)
	ts := newServer(t)
	_, js := ts.js(t)
	type tc struct {
		name   string
		atomic bool
		points []faults.Point
	}
	// The fault cases alternate between atomic batches and one-by-one
	// commits; the failure-free run uses atomic batches.
	cases := []tc{{name: "none", atomic: true}}
	for i, pt := range faults.AllPoints() {
		cases = append(cases, tc{name: string(pt), atomic: i%2 == 0, points: []faults.Point{pt}})
	}
	fromCheckpoint := 0
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stream := fmt.Sprintf("EO%d", i)
			outStream(t, js, stream, c.atomic)
			j := newJob(t, p)
			nf := 0
			if c.points != nil {
				nf = failures
				j.plan = onePerAttempt(nf, int64(31+i), n, c.points...)
			}
			res := j.run(t, func(env *weir.Env) {
				// At 12,000 events/s the source runs for half a second:
				// checkpoints complete while it does, and most failures
				// restore one.
				results := demo.Aggregate(env, demo.Options{Events: n, Keys: k, Rate: 12_000})
				weir.SinkToTransactional(results, ExactlyOnce(ts.url, stream, demoLine, WithBatchSize(300))).Name("nats").UID("nats")
			})
			if res.err != nil {
				t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
			}
			if res.inj != nil && res.inj.Fired() != nf {
				t.Errorf("%d of %d failures fired: %v", res.inj.Fired(), nf, res.inj.Log())
			}
			got := readAll(t, js, stream)
			if d := demo.Diff(want, got); d != "" {
				t.Fatalf("stream differs from the failure-free run: %s", d)
			}
			if c.atomic == strings.Contains(res.log.String(), "does not allow atomic batch publish") {
				t.Errorf("atomic=%v but the log says otherwise", c.atomic)
			}
			restored := strings.Count(res.log.String(), "msg=restoring")
			fromCheckpoint += restored
			t.Logf("%d messages exact, %d restarts (%d from a checkpoint), %d checkpoints, %v", len(got), res.restarts, restored, hooks.Plan(res.env).Status.CompletedCheckpoints.Load(), res.elapsed)
		})
	}
	if !t.Failed() && fromCheckpoint < 3 {
		t.Errorf("only %d restores came from a checkpoint; failures land too early to test restore", fromCheckpoint)
	}
}

// TestExactlyOnceServerRestart stops the NATS server (file storage)
// twice for 400 ms while the demo job commits into it: commits and
// reconnects fail while it is away (publish timeout 150 ms), the job
// restarts and publishes the checkpoints again, and the stream holds
// exactly the failure-free output.
func TestExactlyOnceServerRestart(t *testing.T) {
	const (
		n = 12_000
		k = 97
	)
	want := demo.Expected(n, k)
	ts := newServer(t)
	_, js := ts.js(t)
	outStream(t, js, "RS", true)
	j := newJob(t, 2)
	// Restarts 50 ms apart: the 100 attempts outlast the outages.
	j.extra = map[string]string{config.FixedDelayDelay: "50ms"}
	var emitted atomic.Int64
	done := make(chan struct{})
	restarted := make(chan int, 1)
	go func() {
		// Restart once a fifth and once half of the output went out.
		count := 0
		for _, at := range []int64{n / 5, n / 2} {
			for emitted.Load() < at {
				select {
				case <-done:
					restarted <- count
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
			ts.stop()
			time.Sleep(400 * time.Millisecond)
			ts.start()
			count++
		}
		restarted <- count
	}()
	res := j.run(t, func(env *weir.Env) {
		results := demo.Aggregate(env, demo.Options{Events: n, Keys: k, Rate: 6_000})
		results = weir.Map(results, func(r demo.Result) demo.Result { emitted.Add(1); return r })
		weir.SinkToTransactional(results, ExactlyOnce(ts.url, "RS", demoLine, WithPublishTimeout(150*time.Millisecond))).Name("nats").UID("nats")
	})
	close(done)
	count := <-restarted
	if res.err != nil {
		t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
	}
	if count < 1 {
		t.Errorf("the server was restarted %d times, want at least 1 (the job finished first)", count)
	}
	if res.restarts < 1 {
		t.Errorf("the job did not restart: no commit met the outage")
	}
	_, js = ts.js(t)
	got := readAll(t, js, "RS")
	if d := demo.Diff(want, got); d != "" {
		t.Fatalf("stream differs from the failure-free run: %s", d)
	}
	t.Logf("%d messages exact, %d server restarts, %d job restarts, %v", len(got), count, res.restarts, res.elapsed)
}

// TestExactlyOnceDuplicateWindowRefused: a stream that forgets message
// ids sooner than a commit may be retried fails the job at once, naming
// the stream and both durations.
func TestExactlyOnceDuplicateWindowRefused(t *testing.T) {
	ts := newServer(t)
	_, js := ts.js(t)
	createStream(t, js, jetstream.StreamConfig{Name: "SHORT", Subjects: []string{"short"}, Duplicates: 2 * time.Minute})
	j := newJob(t, 1)
	j.restartNone = true
	res := j.run(t, func(env *weir.Env) {
		results := demo.Aggregate(env, demo.Options{Events: 100, Keys: 7})
		weir.SinkToTransactional(results, ExactlyOnce(ts.url, "SHORT", demoLine, WithCheckpointing(time.Second, 5*time.Minute, 30*time.Second))).UID("nats")
	})
	if res.err == nil {
		t.Fatal("Execute succeeded; want the duplicate window refused")
	}
	for _, s := range []string{`stream "SHORT"`, "duplicate window", "2m0s", "5m31s", "checkpoint timeout 5m0s"} {
		if !strings.Contains(res.err.Error(), s) {
			t.Errorf("error %q does not name %q", res.err, s)
		}
	}
	if res.restarts != 0 {
		t.Errorf("restarts = %d, want 0", res.restarts)
	}
	// The same job fits a window of 6 minutes.
	if _, err := js.UpdateStream(context.Background(), jetstream.StreamConfig{Name: "SHORT", Subjects: []string{"short"}, Duplicates: 6 * time.Minute, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	j = newJob(t, 1)
	res = j.run(t, func(env *weir.Env) {
		results := demo.Aggregate(env, demo.Options{Events: 100, Keys: 7})
		weir.SinkToTransactional(results, ExactlyOnce(ts.url, "SHORT", demoLine, WithCheckpointing(time.Second, 5*time.Minute, 30*time.Second))).UID("nats")
	})
	if res.err != nil {
		t.Fatalf("with a 6 min window: %v", res.err)
	}
	if got := readAll(t, js, "SHORT"); len(got) != 100 {
		t.Fatalf("%d messages, want 100", len(got))
	}
}

// TestExactlyOnceBufferBound: a checkpoint holding more bytes than
// WithMaxBufferedBytes fails the job for good, naming the bound.
func TestExactlyOnceBufferBound(t *testing.T) {
	ts := newServer(t)
	_, js := ts.js(t)
	outStream(t, js, "BIG", true)
	j := newJob(t, 1)
	j.interval = "1h"
	res := j.run(t, func(env *weir.Env) {
		results := demo.Aggregate(env, demo.Options{Events: 5000, Keys: 7})
		weir.SinkToTransactional(results, ExactlyOnce(ts.url, "BIG", demoLine, WithMaxBufferedBytes(10_000))).UID("nats")
	})
	if res.err == nil || !strings.Contains(res.err.Error(), "WithMaxBufferedBytes") || !strings.Contains(res.err.Error(), "10000 bytes") {
		t.Fatalf("Execute = %v, want the buffer bound named", res.err)
	}
	if res.restarts != 0 {
		t.Errorf("restarts = %d, want 0", res.restarts)
	}
}

// TestAtLeastOnceDemo: the at-least-once sink loses nothing under
// failures (every line at least once), and a failure-free run writes the
// output exactly.
func TestAtLeastOnceDemo(t *testing.T) {
	const (
		n = 6_000
		k = 97
	)
	want := demo.Expected(n, k)
	ts := newServer(t)
	_, js := ts.js(t)
	for i, withFaults := range []bool{false, true} {
		stream := fmt.Sprintf("AL%d", i)
		createStream(t, js, jetstream.StreamConfig{Name: stream, Subjects: []string{"al." + stream}})
		j := newJob(t, 2)
		if withFaults {
			j.plan = onePerAttempt(3, 7, n, faults.AllPoints()...)
		}
		res := j.run(t, func(env *weir.Env) {
			results := demo.Aggregate(env, demo.Options{Events: n, Keys: k})
			weir.SinkTo(results, AtLeastOnce(ts.url, stream, demoLine)).UID("nats")
		})
		if res.err != nil {
			t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
		}
		got := readAll(t, js, stream)
		if !withFaults {
			if d := demo.Diff(want, got); d != "" {
				t.Fatalf("failure-free: %s", d)
			}
			continue
		}
		seen := map[string]bool{}
		for _, l := range got {
			seen[l] = true
		}
		for _, l := range want {
			if !seen[l] {
				t.Fatalf("line %q lost under failures", l)
			}
		}
		t.Logf("with failures: %d messages for %d lines (%d duplicates), %d restarts", len(got), len(want), len(got)-len(want), res.restarts)
	}
}
