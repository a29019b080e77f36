package ha

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/ha/etcdtest"
)

// etcd going away: the leader cannot renew its lease, Done closes within
// about the TTL, and no write succeeds afterwards. When etcd returns (same
// data), a fresh client campaigns, wins a larger term and reads what the
// old leader wrote.
func TestEtcdStopEndsTermAndRestartKeepsData(t *testing.T) {
	srv := etcdtest.Start(t, "")
	c1 := connect(t, srv)
	ctx := ctxT(t, 60*time.Second)
	l1 := campaign(t, c1, "jm-1")
	if err := l1.SaveJob(ctx, "demo", []byte("graph")); err != nil {
		t.Fatal(err)
	}
	if err := l1.RegisterCheckpoint(ctx, "demo", 4, "/shared/chk-4"); err != nil {
		t.Fatal(err)
	}
	if _, err := l1.ReserveCheckpointIDs(ctx, "demo", 8); err != nil {
		t.Fatal(err)
	}

	srv.Stop()
	d := waitClosed(t, l1.Done(), testTTL+2*time.Second, "Done after etcd stopped")
	t.Logf("Done closed %v after etcd stopped (TTL %v)", d, testTTL)
	if d > testTTL+time.Second {
		t.Errorf("Done closed %v after etcd stopped, want within TTL %v + 1 s", d, testTTL)
	}
	wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	for op, err := range allFencedWrites(wctx, l1) {
		if err == nil {
			t.Errorf("%s succeeded after the term ended", op)
		}
	}
	cancel()

	srv.Restart(t)
	// The old leader's writes stay refused with etcd back.
	requireAllNotLeader(t, allFencedWrites(ctx, l1))
	c2 := connect(t, srv)
	l2 := campaign(t, c2, "jm-2")
	if l2.Term() <= l1.Term() {
		t.Fatalf("term after restart %d, before %d", l2.Term(), l1.Term())
	}
	jobs, err := c2.Jobs(ctx)
	if err != nil || string(jobs["demo"]) != "graph" {
		t.Fatalf("jobs after restart = %q, %v", jobs, err)
	}
	cps, err := c2.Checkpoints(ctx, "demo")
	if err != nil || len(cps) != 1 || cps[0] != (RegisteredCheckpoint{4, "/shared/chk-4"}) {
		t.Fatalf("checkpoints after restart = %v, %v", cps, err)
	}
	if n, err := c2.CheckpointIDBound(ctx, "demo"); err != nil || n != 8 {
		t.Fatalf("counter after restart = %d, %v", n, err)
	}
	// The first client reconnects by itself and can stand by again.
	if _, err := c1.Leader(ctx); err != nil {
		t.Fatalf("old client after restart: %v", err)
	}
	if err := l2.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	l3 := campaign(t, c1, "jm-1")
	if l3.Term() <= l2.Term() {
		t.Fatalf("term %d after %d", l3.Term(), l2.Term())
	}
}

// A candidate waiting while etcd is away returns an error once its lease
// is lost (or its ctx ends), and Close does not hang on an unreachable
// etcd.
func TestCampaignAndCloseWithEtcdAway(t *testing.T) {
	srv := etcdtest.Start(t, "")
	c1, c2 := connect(t, srv), connect(t, srv)
	l1 := campaign(t, c1, "jm-1")
	errc := make(chan error, 1)
	go func() {
		_, err := c2.Campaign(ctxT(t, 30*time.Second), LeaderInfo{ID: "jm-2"})
		errc <- err
	}()
	time.Sleep(300 * time.Millisecond)
	stopped := time.Now()
	srv.Stop()
	t.Logf("stop took %v", time.Since(stopped))
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("campaign won with etcd away")
		}
		t.Logf("waiting campaign ended %v after the stop: %v", time.Since(stopped), err)
	case <-time.After(testTTL + 5*time.Second):
		t.Fatal("a waiting campaign did not end after its lease was lost")
	}
	waitClosed(t, l1.Done(), testTTL+2*time.Second, "Done after etcd stopped")
	start := time.Now()
	if err := c1.Close(); err != nil {
		t.Logf("Close with etcd away: %v", err)
	}
	t.Logf("c1.Close %v", time.Since(start))
	c2.Close()
	t.Logf("both Close %v", time.Since(start))
	if d := time.Since(start); d > 3*c1.cfg.DialTimeout {
		t.Fatalf("Close took %v with etcd away", d)
	}
	if _, err := c1.Jobs(context.Background()); err == nil || !errors.Is(err, context.Canceled) && err.Error() == "" {
		t.Fatalf("Jobs after Close = %v", err)
	}
}
