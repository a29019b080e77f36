package postgres

import (
	"context"
	"errors"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	weirconfig "github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/jobs/demo"

	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/testutil"
)

// Fault class 7: COMMIT PREPARED or ROLLBACK PREPARED whose connection
// drops after the request was sent. The sink talks to the server through
// cutProxy, which cuts the control connection at the statement.

// newProxySink opens subtask 0 of 1 of an id sink through proxy; its log
// goes to the returned buffer.
func newProxySink(t *testing.T, proxy *cutProxy, prefix, table string, opts ...Option) (idSink, *testutil.SyncBuffer) {
	t.Helper()
	var log testutil.SyncBuffer
	opts = append([]Option{WithTransactionPrefix(prefix), WithCreateTable("id bigint"),
		WithLogger(slog.New(slog.NewTextHandler(&log, nil)))}, opts...)
	s := ExactlyOnce(proxy.connString(), table, []string{"id"},
		func(v int64, dst []any) []any { return append(dst, v) }, opts...)().(*exactlyOnce[int64])
	if err := s.open(context.Background(), "pg", 0, 1, nil, nil); err != nil {
		t.Fatalf("open through the proxy: %v", err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return idSink{s, t}, &log
}

// wantCuts checks that the proxy cut exactly the statements want.
func wantCuts(t *testing.T, p *cutProxy, want ...string) {
	t.Helper()
	got := p.cutStatements()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("proxy cut %q, want %q", got, want)
	}
}

func wantLog(t *testing.T, log *testutil.SyncBuffer, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(log.String(), s) {
			t.Errorf("sink log does not say %q:\n%s", s, log.String())
		}
	}
}

// TestCommitPreparedAnswerLost: the server commits, the answer is lost
// with the connection. Commit resolves on a new connection: the gid is
// gone from pg_prepared_xacts and the marker row is visible, so it was
// committed; nothing is sent again. Exactly once.
func TestCommitPreparedAnswerLost(t *testing.T) {
	db, prefix, table := protocolTable(t)
	proxy := newCutProxy(t)
	s, log := newProxySink(t, proxy, prefix, table)
	txn := s.prepare(1, 2, 3)
	stmt := "COMMIT PREPARED " + quoteLiteral(txn.GID)
	proxy.arm(cutRule{needle: stmt, mode: cutAfter})
	s.must("commit with the answer lost", s.Commit(context.Background(), txn))
	wantCuts(t, proxy, stmt)
	wantLog(t, log, "COMMIT PREPARED did not get through", "was no longer prepared; its marker row decided", "committed=true")
	s.must("commit again", s.Commit(context.Background(), txn))
	wantIDs(t, db, table, 1, 2, 3)
	wantPrepared(t, db, prefix)
	// The sink goes on on its new connection.
	s.must("commit next", s.Commit(context.Background(), s.prepare(4)))
	wantIDs(t, db, table, 1, 2, 3, 4)
}

// TestCommitPreparedRequestLost: the connection drops before the request
// reaches the server. The gid is still prepared, so Commit commits it on a
// new connection.
func TestCommitPreparedRequestLost(t *testing.T) {
	db, prefix, table := protocolTable(t)
	proxy := newCutProxy(t)
	s, log := newProxySink(t, proxy, prefix, table)
	txn := s.prepare(1, 2, 3)
	stmt := "COMMIT PREPARED " + quoteLiteral(txn.GID)
	proxy.arm(cutRule{needle: stmt, mode: cutBefore})
	s.must("commit with the request lost", s.Commit(context.Background(), txn))
	wantCuts(t, proxy, stmt)
	wantLog(t, log, "was still prepared and is now finished", "committed=true")
	wantIDs(t, db, table, 1, 2, 3)
	wantPrepared(t, db, prefix)
}

// TestRollbackPreparedOutcomeUnknown: the same two cuts for ROLLBACK
// PREPARED (a restore aborting the transaction its checkpoint had open):
// rolled back exactly once, no rows, nothing left prepared.
func TestRollbackPreparedOutcomeUnknown(t *testing.T) {
	db, prefix, table := protocolTable(t)
	proxy := newCutProxy(t)
	s, log := newProxySink(t, proxy, prefix, table)
	kept := s.prepare(1)
	s.must("commit", s.Commit(context.Background(), kept))
	for _, mode := range []cutMode{cutAfter, cutBefore} {
		txn := s.prepare(10, 11)
		stmt := "ROLLBACK PREPARED " + quoteLiteral(txn.GID)
		proxy.arm(cutRule{needle: stmt, mode: mode})
		s.must("abort with the connection cut", s.Abort(context.Background(), txn))
		s.must("abort again", s.Abort(context.Background(), txn))
		wantPrepared(t, db, prefix)
	}
	wantLog(t, log, "ROLLBACK PREPARED did not get through", "was no longer prepared; its marker row decided", "was still prepared and is now finished")
	wantIDs(t, db, table, 1)
	if n := len(proxy.cutStatements()); n != 2 {
		t.Errorf("proxy cut %d statements, want 2", n)
	}
}

// TestCommitPreparedServerAwayThenBack: the answer is lost and then the
// server is unreachable for a while (every connection refused); Commit
// keeps trying with backoff and resolves once it is back.
func TestCommitPreparedServerAwayThenBack(t *testing.T) {
	db, prefix, table := protocolTable(t)
	proxy := newCutProxy(t)
	s, log := newProxySink(t, proxy, prefix, table)
	for _, mode := range []cutMode{cutAfter, cutBefore} {
		txn := s.prepare(int64(mode))
		back := make(chan struct{})
		proxy.arm(cutRule{needle: "COMMIT PREPARED " + quoteLiteral(txn.GID), mode: mode, then: func(p *cutProxy) {
			p.refuse = true
			time.AfterFunc(500*time.Millisecond, func() { p.setRefuse(false); close(back) })
		}})
		start := time.Now()
		s.must("commit across the outage", s.Commit(context.Background(), txn))
		<-back
		if d := time.Since(start); d < 500*time.Millisecond {
			t.Errorf("commit returned after %s, before the server was back", d)
		}
	}
	wantIDs(t, db, table, 0, 1)
	wantPrepared(t, db, prefix)
	resolved := resolvedRE.FindAllStringSubmatch(log.String(), -1)
	if len(resolved) != 2 {
		t.Fatalf("sink log has %d resolutions, want 2:\n%s", len(resolved), log.String())
	}
	for _, m := range resolved {
		if n, _ := strconv.Atoi(m[1]); n < 2 {
			t.Errorf("resolved after %d attempts, want several while the server was away:\n%s", n, log.String())
		}
	}
}

var resolvedRE = regexp.MustCompile(`msg="postgres sink: resolved the outcome of COMMIT PREPARED".* attempts=(\d+)`)

// TestCommitPreparedUnresolved: the answer is lost and the server stays
// unreachable past WithResolveTimeout. Commit fails with ErrOutcomeUnknown,
// naming the transaction and the server, and not for good; a restore
// (another sink, restoring the handle) then commits it, exactly once. A
// Commit that cannot reach the server at all says the transaction is
// still prepared.
func TestCommitPreparedUnresolved(t *testing.T) {
	db, prefix, table := protocolTable(t)
	proxy := newCutProxy(t)
	s, log := newProxySink(t, proxy, prefix, table, WithResolveTimeout(400*time.Millisecond))
	defer func() { t.Log(log.String()) }()
	answerLost, unsent := s.prepare(1), s.prepare(2)
	refuse := func(p *cutProxy) { p.refuse = true }
	proxy.arm(cutRule{needle: "COMMIT PREPARED " + quoteLiteral(answerLost.GID), mode: cutAfter, then: refuse})
	err := s.Commit(context.Background(), answerLost)
	if !errors.Is(err, ErrOutcomeUnknown) || runtime.IsUnrecoverable(err) {
		t.Fatalf("Commit with the server gone = %v, want a recoverable error wrapping ErrOutcomeUnknown", err)
	}
	for _, want := range []string{answerLost.GID, proxy.addr() + "/", "WithResolveTimeout 400ms", "either finished or still prepared", "restore of its checkpoint finishes it"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	t.Logf("answer lost: %v", err)

	// The server still refuses: the next Commit cannot even send its
	// statement, so its outcome is known.
	err = s.Commit(context.Background(), unsent)
	if err == nil || errors.Is(err, ErrOutcomeUnknown) || runtime.IsUnrecoverable(err) {
		t.Fatalf("Commit with the server gone = %v, want a recoverable error that is not ErrOutcomeUnknown", err)
	}
	for _, want := range []string{unsent.GID, "database unreachable", "still prepared", "restore of its checkpoint finishes it"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	t.Logf("unsent: %v", err)
	s.Close(context.Background())

	// The restore, straight to the server.
	r := newIDSink(t, prefix, table, 0, 1, answerLost, unsent)
	for _, txn := range []Txn{answerLost, unsent} {
		r.must("commit restored "+txn.GID, r.Commit(context.Background(), txn))
	}
	wantIDs(t, db, table, 1, 2)
	wantPrepared(t, db, prefix)
}

// TestCommitPreparedCancelled: the task's cancellation ends a resolution
// at once, however long WithResolveTimeout is.
func TestCommitPreparedCancelled(t *testing.T) {
	db, prefix, table := protocolTable(t)
	proxy := newCutProxy(t)
	s, _ := newProxySink(t, proxy, prefix, table, WithResolveTimeout(time.Hour))
	txn := s.prepare(1)
	proxy.arm(cutRule{needle: "COMMIT PREPARED " + quoteLiteral(txn.GID), mode: cutBefore, then: func(p *cutProxy) { p.refuse = true }})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := s.Commit(ctx, txn)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), txn.GID) {
		t.Fatalf("Commit with its context ending = %v, want context.DeadlineExceeded naming %s", err, txn.GID)
	}
	s.Close(context.Background())
	r := newIDSink(t, prefix, table, 0, 1, txn)
	r.must("commit restored", r.Commit(context.Background(), txn))
	wantIDs(t, db, table, 1)
	wantPrepared(t, db, prefix)
}

// proxiedSink adds the exactly-once sink into table under prefix, through
// proxy.
func proxiedSink(proxy *cutProxy, prefix, table string, opts ...Option) func(weir.Stream[demo.Result]) {
	return func(s weir.Stream[demo.Result]) {
		opts = append([]Option{WithTransactionPrefix(prefix), WithCreateTable(demoTable), WithBatchRows(2000)}, opts...)
		weir.SinkToTransactional(s, ExactlyOnce(proxy.connString(), table, demoColumns, demoRow, opts...)).Name("pg").UID("pg")
	}
}

// TestExactlyOnceCommitCutsInJob: the demo at parallelism 2 through the
// proxy, which cuts the connection at six COMMIT PREPARED statements,
// three after the server ran them and three before it saw them. The sink
// resolves each one: the job needs no restart, and the table holds
// exactly the failure-free output.
func TestExactlyOnceCommitCutsInJob(t *testing.T) {
	needServer(t, true)
	const n, k = 20_000, 37
	db := testDB(t)
	table := "weir_t_eo_commit_cuts"
	resetSink(t, db, table, table)
	proxy := newCutProxy(t)
	proxy.arm(cutRule{needle: "COMMIT PREPARED", mode: cutAfter, times: 3})
	proxy.arm(cutRule{needle: "COMMIT PREPARED", mode: cutBefore, times: 3})
	j := newJob(t, n, k, 2, proxiedSink(proxy, table, table))
	res := j.run(t, context.Background(), nil)
	if res.err != nil {
		t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
	}
	if cuts := proxy.cutStatements(); len(cuts) != 6 {
		t.Fatalf("proxy cut %d commits (%q), want 6; the job took too few checkpoints", len(cuts), cuts)
	}
	if res.restarts != 0 {
		t.Errorf("restarts = %d, want 0: the sink resolves a cut commit itself\nlog:\n%s", res.restarts, res.log)
	}
	if d := demo.Diff(demo.Expected(n, k), resultLines(t, db, table)); d != "" {
		t.Fatalf("table %s differs from the failure-free output: %s", table, d)
	}
	if left := prepared(t, db, table); len(left) > 0 {
		t.Fatalf("prepared transactions left behind: %v", left)
	}
}

// TestExactlyOnceCommitUnresolvedInJob: a COMMIT PREPARED loses its
// answer and the database stays away longer than WithResolveTimeout. The
// task fails with an error naming the checkpoint, the transaction and the
// server; the restart (after the server is back) restores the checkpoint
// and finishes the transaction: one restart, exact output, nothing left
// prepared.
func TestExactlyOnceCommitUnresolvedInJob(t *testing.T) {
	needServer(t, true)
	const n, k = 20_000, 37
	db := testDB(t)
	table := "weir_t_eo_commit_unresolved"
	resetSink(t, db, table, table)
	proxy := newCutProxy(t)
	back := make(chan struct{})
	proxy.arm(cutRule{needle: "COMMIT PREPARED", mode: cutAfter, then: func(p *cutProxy) {
		p.refuse = true
		time.AfterFunc(time.Second, func() { p.setRefuse(false); close(back) })
	}})
	j := newJob(t, n, k, 2, proxiedSink(proxy, table, table, WithResolveTimeout(300*time.Millisecond)))
	j.rate = 40_000 // still running when the restart comes
	env := weir.NewEnv(weir.WithConfig(testutil.FaultConfig(t, j.parallelism, j.stateDir, j.interval, false,
		map[string]string{weirconfig.FixedDelayDelay: "2s"})))
	res := j.runEnv(t, context.Background(), env)
	<-back
	if res.err != nil {
		t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
	}
	if res.restarts != 1 {
		t.Errorf("restarts = %d, want 1\nlog:\n%s", res.restarts, res.log)
	}
	cuts := proxy.cutStatements()
	if len(cuts) != 1 {
		t.Fatalf("proxy cut %q, want one commit", cuts)
	}
	gid := strings.Trim(strings.TrimPrefix(cuts[0], "COMMIT PREPARED "), "'")
	m := regexp.MustCompile(`commit transaction of checkpoint \d+: postgres sink [^"]*` + regexp.QuoteMeta(gid) + ` on ` + regexp.QuoteMeta(proxy.addr()) + `/test: outcome unknown after`).FindString(res.log.String())
	if m == "" {
		t.Errorf("the job's log has no task failure naming the checkpoint, %s and the server with the outcome unknown:\n%s", gid, res.log)
	}
	t.Logf("task failure: %s…", m)
	if d := demo.Diff(demo.Expected(n, k), resultLines(t, db, table)); d != "" {
		t.Fatalf("table %s differs from the failure-free output: %s", table, d)
	}
	if left := prepared(t, db, table); len(left) > 0 {
		t.Fatalf("prepared transactions left behind: %v", left)
	}
}
