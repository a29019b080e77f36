package kafka

import (
	"context"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/jobs/demo"
	"github.com/weirstream/weir/internal/runtime"
)

// newProxiedSinkUnit is a sinkUnit whose broker sits behind a proxy, with
// the sink's log kept in a buffer.
func newProxiedSinkUnit(t *testing.T, opts ...Option) (*sinkUnit, *proxy, *syncBuffer) {
	b, p := newProxiedBroker(t)
	topic := b.topic(t, 2)
	log := &syncBuffer{}
	u := &sinkUnit{t: t, b: b, topic: topic, prefix: "u-" + topic, opts: opts,
		log: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	return u, p, log
}

// waitCut waits for the proxy to report its cuts done.
func waitCut(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the proxy never cut the request")
	}
}

// ends counts the EndTxn requests the proxy saw for id with this commit
// flag, and how many of them it cut.
func ends(p *proxy, id string, commit bool) (sent, cut int) {
	for _, e := range p.endTxns() {
		if e.TxnID == id && e.Commit == commit {
			sent++
			if e.Cut {
				cut++
			}
		}
	}
	return sent, cut
}

// TestSinkEndUnknownOutcome (fault class 7): the connection of a commit's
// EndTxn is cut once, either right after the proxy forwarded it (the
// broker committed; the client gets no answer) or before (the broker never
// saw it); the same for an abort of a pre-committed and of an open
// transaction. Each end returns success after resolving, the commit's
// records are visible exactly once to a read_committed consumer, the
// aborted ones never, and no transaction is left open: a new producer
// initializes the ids at once. With franz-go's own retries the client
// resends the request; with RequestRetries(0) the sink resolves it.
func TestSinkEndUnknownOutcome(t *testing.T) {
	for _, c := range []struct {
		name    string
		mode    cutMode
		retries bool
	}{
		{"after-forward/client-retries", cutAfter, true},
		{"after-forward/sink-resolves", cutAfter, false},
		{"before-forward/sink-resolves", dropBefore, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var opts []Option
			if !c.retries {
				opts = append(opts, WithClientOptions(kgo.RequestRetries(0)))
			}
			u, p, log := newProxiedSinkUnit(t, opts...)
			ctx := context.Background()
			a := u.mustOpen(0, 1)

			t1 := u.txnWith(a, "a", "b", "b", "c")
			if err := a.PreCommit(ctx, t1); err != nil {
				t.Fatal(err)
			}
			done := p.cut(c.mode, t1.TransactionalID, true, 1)
			if err := a.Commit(ctx, t1); err != nil {
				t.Fatalf("commit through a cut connection: %v\nlog:\n%s", err, log)
			}
			waitCut(t, done)
			if sent, cut := ends(p, t1.TransactionalID, true); cut != 1 || sent < 2 {
				t.Fatalf("commits of %s: %d sent, %d cut; want the cut one and a resend: %v", t1.TransactionalID, sent, cut, p.endTxns())
			}
			// A repeated commit (a restore of the same checkpoint) still
			// succeeds: nothing was reported committed twice.
			if err := a.Commit(ctx, checkpointed(t1)); err != nil {
				t.Fatalf("repeated commit: %v", err)
			}

			t2 := u.txnWith(a, "pre-committed-then-aborted")
			if err := a.PreCommit(ctx, t2); err != nil {
				t.Fatal(err)
			}
			done = p.cut(c.mode, t2.TransactionalID, false, 1)
			if err := a.Abort(ctx, t2); err != nil {
				t.Fatalf("abort of a pre-committed transaction through a cut connection: %v\nlog:\n%s", err, log)
			}
			waitCut(t, done)

			t3 := u.flushed(a, u.txnWith(a, "open-then-aborted"))
			done = p.cut(c.mode, t3.TransactionalID, false, 1)
			if err := a.Abort(ctx, t3); err != nil {
				t.Fatalf("abort of the open transaction through a cut connection: %v\nlog:\n%s", err, log)
			}
			waitCut(t, done)

			resolved := strings.Count(log.String(), "transaction end resolved")
			if c.retries && resolved != 0 {
				t.Errorf("franz-go's retries should have resolved the ends, yet the sink resolved %d:\n%s", resolved, log)
			}
			if !c.retries && resolved != 3 {
				t.Errorf("the sink resolved %d ends, want 3 (commit, two aborts):\n%s", resolved, log)
			}
			u.wantCommitted("a", "b", "b", "c")
			// Nothing left open or in the middle of an end: a new producer
			// initializes each id without waiting.
			for _, txn := range []*Txn{t1, t2, t3} {
				start := time.Now()
				if err := fence(ctx, u.b.client(t), txn.TransactionalID, time.Minute); err != nil {
					t.Fatalf("init %s: %v", txn.TransactionalID, err)
				}
				if d := time.Since(start); d > 2*time.Second {
					t.Errorf("init %s took %v: something was still open", txn.TransactionalID, d)
				}
			}
		})
	}
}

// TestSinkCommitOutcomeUnresolved: every commit of the transaction is cut
// after the broker acted on it, so the sink cannot learn the outcome. The
// commit fails (not for good) naming the transactional id and saying the
// outcome is unknown; the restore of the checkpoint commits it again, which
// succeeds, and the records are visible exactly once.
func TestSinkCommitOutcomeUnresolved(t *testing.T) {
	u, p, log := newProxiedSinkUnit(t, WithClientOptions(kgo.RequestRetries(0)), withRequestTimeout(300*time.Millisecond))
	ctx := context.Background()
	a := u.mustOpen(0, 1)
	t1 := u.txnWith(a, "x", "y")
	if err := a.PreCommit(ctx, t1); err != nil {
		t.Fatal(err)
	}
	p.cut(cutAfter, t1.TransactionalID, true, 1000)
	err := a.Commit(ctx, t1)
	if err == nil || !strings.Contains(err.Error(), "commit outcome unknown") || !strings.Contains(err.Error(), t1.TransactionalID) {
		t.Fatalf("commit with every answer cut = %v, want an unknown-outcome error naming %s\nlog:\n%s", err, t1.TransactionalID, log)
	}
	if runtime.IsUnrecoverable(err) || errors.Is(err, weir.ErrTransactionLost) {
		t.Fatalf("an unknown outcome must fail the task, not the job: %v", err)
	}
	t.Logf("error: %v", err)
	p.cut(cutAfter, "", true, 0) // the network heals
	a.Close(ctx)
	r := u.mustOpen(0, 1, checkpointed(t1))
	if err := r.Commit(ctx, checkpointed(t1)); err != nil {
		t.Fatalf("commit at restore: %v", err)
	}
	u.wantCommitted("x", "y")
}

// TestSinkCommitAfterTransactionTimeoutIsDataLoss (fault class 8): the
// broker is unreachable (the proxy holds every request) from right after
// the pre-commit until past the transaction timeout; the broker aborts the
// transaction on its own, and the commit, sent during the outage and
// delivered after it, fails the job for good with a DATA LOSS error that
// names the transactional id and the records it held, wraps
// weir.ErrTransactionLost, and is logged at ERROR level.
func TestSinkCommitAfterTransactionTimeoutIsDataLoss(t *testing.T) {
	const timeout = 1500 * time.Millisecond
	u, p, log := newProxiedSinkUnit(t, WithTransactionTimeout(timeout), WithCheckpointing(10*time.Millisecond, 100*time.Millisecond, 10*time.Millisecond))
	ctx := context.Background()
	a := u.mustOpen(0, 1)
	t1 := u.txnWith(a, "lost-1", "lost-2", "lost-3")
	if err := a.PreCommit(ctx, t1); err != nil {
		t.Fatal(err)
	}
	if t1.Records != 3 || t1.Bytes != int64(3*len("lost-1")) {
		t.Fatalf("handle counts %d records, %d bytes; want 3, %d", t1.Records, t1.Bytes, 3*len("lost-1"))
	}
	began := time.Now()
	p.pause()
	errc := make(chan error, 1)
	go func() { errc <- a.Commit(ctx, t1) }()
	time.Sleep(timeout + time.Second - time.Since(began))
	p.resume()
	err := <-errc
	if err == nil {
		t.Fatal("commit after the transaction timeout succeeded")
	}
	t.Logf("error: %v", err)
	if !errors.Is(err, weir.ErrTransactionLost) || !runtime.IsUnrecoverable(err) {
		t.Fatalf("commit error %v: want an unrecoverable error wrapping ErrTransactionLost", err)
	}
	for _, want := range []string{"DATA LOSS", t1.TransactionalID, "3 records, 18 bytes", "transaction.timeout.ms (1.5s here)", "kafka.WithTransactionTimeout", "transaction.max.timeout.ms"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("commit error lacks %q: %v", want, err)
		}
	}
	alert := ""
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(line, "level=ERROR") && strings.Contains(line, "DATA LOSS") {
			alert = line
		}
	}
	for _, want := range []string{"transactional_id=" + t1.TransactionalID, "records=3", "bytes=18", "transaction_timeout=1.5s"} {
		if !strings.Contains(alert, want) {
			t.Errorf("no ERROR data-loss alert with %s; log:\n%s", want, log)
		}
	}
	u.wantCommitted()
}

// TestSinkTransactionTimeout: the sink value exposes its producers'
// transaction timeout as a weir.TransactionTimeouter.
func TestSinkTransactionTimeout(t *testing.T) {
	for _, c := range []struct {
		opts []Option
		want time.Duration
	}{
		{nil, 15 * time.Minute},
		{[]Option{WithTransactionTimeout(40 * time.Minute)}, 40 * time.Minute},
	} {
		var sink weir.TwoPhaseCommitSink[string, *Txn] = ExactlyOnce[string]([]string{"127.0.0.1:1"}, "t", serializeString, c.opts...)()
		tt, ok := sink.(weir.TransactionTimeouter)
		if !ok {
			t.Fatal("the exactly-once sink has no TransactionTimeout method")
		}
		if got := tt.TransactionTimeout(); got != c.want {
			t.Errorf("TransactionTimeout() = %v, want %v", got, c.want)
		}
	}
}

// slowCommit delays the first commit of a transaction with records: the
// commit comes late, after the checkpoint completed.
type slowCommit struct {
	weir.TwoPhaseCommitSink[demo.Result, *Txn]
	delay   time.Duration
	delayed bool
}

func (s *slowCommit) Commit(ctx context.Context, txn *Txn) error {
	if !s.delayed && !txn.Empty {
		s.delayed = true
		time.Sleep(s.delay)
	}
	return s.TwoPhaseCommitSink.Commit(ctx, txn)
}

// TestJobFailsOnLostTransaction (fault class 8, through the engine): the
// first commit after a completed checkpoint comes later than the
// transaction timeout; the broker aborted the transaction, and the job
// fails at once (no restart) with the DATA LOSS error, which the
// two-phase-commit operator prefixes with the checkpoint id.
func TestJobFailsOnLostTransaction(t *testing.T) {
	const timeout = time.Second
	b := newBroker(t)
	topic := b.topic(t, 1)
	j := newJob(t, 1)
	res := j.run(t, func(env *weir.Env) {
		results := demo.Aggregate(env, demo.Options{Events: 50_000, Keys: 97})
		weir.SinkToTransactional(results, func() weir.TwoPhaseCommitSink[demo.Result, *Txn] {
			return &slowCommit{delay: timeout + time.Second, TwoPhaseCommitSink: ExactlyOnce(b.addrs, topic, func(r demo.Result, rec *kgo.Record) error {
				rec.Value = r.AppendLine(nil)
				return nil
			}, WithTransactionalIDPrefix("lost-"+topic), WithTransactionTimeout(timeout),
				WithCheckpointing(10*time.Millisecond, 500*time.Millisecond, 100*time.Millisecond))()}
		}).UID("kafka")
	})
	err := res.err
	if !errors.Is(err, weir.ErrTransactionLost) {
		t.Fatalf("Execute = %v, want ErrTransactionLost\nlog:\n%s", err, res.log)
	}
	if res.restarts != 0 {
		t.Errorf("%d restarts; a lost transaction must fail the job at once", res.restarts)
	}
	m := regexp.MustCompile(`commit transaction of checkpoint (\d+): kafka sink "kafka": DATA LOSS: commit lost-` + regexp.QuoteMeta(topic) + `-kafka-0-\d\(producer \d+ epoch \d+\): .*its (\d+) records, (\d+) bytes are lost`).FindStringSubmatch(err.Error())
	if m == nil || m[2] == "0" {
		t.Fatalf("the job's error does not name the checkpoint, transaction and records: %v", err)
	}
	if !strings.Contains(res.log.String(), "level=ERROR") || !strings.Contains(res.log.String(), "records="+m[2]) {
		t.Errorf("no ERROR data-loss alert with records=%s in the log:\n%s", m[2], res.log)
	}
	t.Logf("checkpoint %s lost %s records (%s bytes): %v", m[1], m[2], m[3], err)
}
