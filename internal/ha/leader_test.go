package ha

import (
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/weirstream/weir/internal/ha/etcdtest"
)

// One leads, a second candidate waits, wins when the first resigns with a
// larger term, and the first's fenced writes are refused from then on.
func TestElectionTermsAndResign(t *testing.T) {
	srv := etcdtest.Start(t, "")
	c1, c2 := connect(t, srv), connect(t, srv)
	ctx := ctxT(t, 30*time.Second)

	if _, err := c1.Leader(ctx); !errors.Is(err, ErrNoLeader) {
		t.Fatalf("Leader before any campaign = %v, want ErrNoLeader", err)
	}
	l1 := campaign(t, c1, "jm-1")
	if l1.Term() <= 0 || l1.Info().Term != l1.Term() || l1.Info().ID != "jm-1" {
		t.Fatalf("first term %d, info %+v", l1.Term(), l1.Info())
	}
	got, err := c2.Leader(ctx)
	if err != nil || got != l1.Info() {
		t.Fatalf("Leader = %+v, %v; want %+v", got, err, l1.Info())
	}

	second := campaignAsync(t, c2, "jm-2")
	select {
	case <-second:
		t.Fatal("a second candidate won while the first leads")
	case <-time.After(500 * time.Millisecond):
	}
	if err := l1.SaveJob(ctx, "demo", []byte("v1")); err != nil {
		t.Fatalf("leader's write: %v", err)
	}

	if err := l1.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, l1.Done(), time.Second, "Done after Resign")
	var l2 *Leadership
	select {
	case l2 = <-second:
	case <-time.After(5 * time.Second):
		t.Fatal("the standby did not win after the leader resigned")
	}
	if l2 == nil {
		t.FailNow()
	}
	if l2.Term() <= l1.Term() {
		t.Fatalf("new term %d not above old term %d", l2.Term(), l1.Term())
	}
	requireAllNotLeader(t, allFencedWrites(ctx, l1))
	if got, err := c1.Leader(ctx); err != nil || got.ID != "jm-2" || got.Term != l2.Term() {
		t.Fatalf("Leader after failover = %+v, %v", got, err)
	}
	if err := l2.SaveJob(ctx, "demo", []byte("v2")); err != nil {
		t.Fatalf("new leader's write: %v", err)
	}
	// Resigning twice is a no-op; the old term stays refused.
	if err := l1.Resign(ctx); err != nil {
		t.Fatalf("second Resign: %v", err)
	}
	err = l1.RegisterCheckpoint(ctx, "demo", 5, "/p")
	if !errors.Is(err, ErrNotLeader) || !strings.Contains(err.Error(), "term") || !strings.Contains(err.Error(), "another JobManager") {
		t.Fatalf("stale write error %q should wrap ErrNotLeader and name the term and another JobManager", err)
	}
}

// A leader whose process is paused (SIGSTOP): its goroutines stop, so its
// lease is not renewed and Done cannot close. The lease expires, the
// standby wins, and when the old leader wakes its writes reach etcd and
// fail the fence.
func TestPausedLeaderIsFencedByEtcd(t *testing.T) {
	srv := etcdtest.Start(t, "")
	c1, c2 := connect(t, srv), connect(t, srv)
	ctx := ctxT(t, 30*time.Second)
	l1 := campaign(t, c1, "jm-1")
	second := campaignAsync(t, c2, "jm-2")

	// "Pause": stop the monitor and the keepalive without ending the term
	// locally, as a stopped process would.
	l1.stop()
	l1.sess.Orphan()
	start := time.Now()
	l2 := <-second
	if l2 == nil {
		t.FailNow()
	}
	t.Logf("standby won %v after the leader paused (TTL %v)", time.Since(start), testTTL)
	if l1.lost() {
		t.Fatal("test setup: the paused leader's Done closed, so its writes would not reach etcd")
	}
	// The wake-up: the old leader completes a checkpoint.
	err := l1.RegisterCheckpoint(ctx, "demo", 7, "/shared/ha/demo/chk-7")
	if !errors.Is(err, ErrNotLeader) {
		t.Fatalf("paused leader's RegisterCheckpoint after the new election = %v, want ErrNotLeader", err)
	}
	waitClosed(t, l1.Done(), time.Second, "Done after a refused write")
	requireAllNotLeader(t, allFencedWrites(ctx, l1))
	if cps, err := c2.Checkpoints(ctx, "demo"); err != nil || len(cps) != 0 {
		t.Fatalf("checkpoints after refused registration = %v, %v; want none", cps, err)
	}
	if err := l2.RegisterCheckpoint(ctx, "demo", 7, "/shared/ha/demo/chk-7"); err != nil {
		t.Fatal(err)
	}
}

// Revoking the leader's lease from another client (what an operator or
// an expiry does) closes Done and refuses every write.
func TestRevokedLeaseEndsTerm(t *testing.T) {
	srv := etcdtest.Start(t, "")
	c1, c2 := connect(t, srv), connect(t, srv)
	ctx := ctxT(t, 30*time.Second)
	l1 := campaign(t, c1, "jm-1")
	if _, err := c2.cli.Revoke(ctx, l1.sess.Lease()); err != nil {
		t.Fatal(err)
	}
	d := waitClosed(t, l1.Done(), testTTL+time.Second, "Done after the lease was revoked")
	t.Logf("Done closed %v after the revocation", d)
	requireAllNotLeader(t, allFencedWrites(ctx, l1))
	l2 := campaign(t, c2, "jm-2")
	if l2.Term() <= l1.Term() {
		t.Fatalf("term %d after %d", l2.Term(), l1.Term())
	}
}

// Observe sends the current leader first, then every change, and a zero
// LeaderInfo when nobody leads.
func TestObserve(t *testing.T) {
	srv := etcdtest.Start(t, "")
	c1, c2, obs := connect(t, srv), connect(t, srv), connect(t, srv)
	ctx := ctxT(t, 30*time.Second)
	ch := obs.Observe(ctx)
	next := func(what string) LeaderInfo {
		t.Helper()
		select {
		case li, ok := <-ch:
			if !ok {
				t.Fatalf("%s: Observe channel closed", what)
			}
			return li
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: nothing observed", what)
		}
		return LeaderInfo{}
	}
	if li := next("initial"); li != (LeaderInfo{}) {
		t.Fatalf("initial observation %+v, want none", li)
	}
	l1 := campaign(t, c1, "jm-1")
	if li := next("first leader"); li != l1.Info() {
		t.Fatalf("observed %+v, want %+v", li, l1.Info())
	}
	second := campaignAsync(t, c2, "jm-2")
	time.Sleep(300 * time.Millisecond) // jm-2's candidate key exists, changes nothing
	if err := l1.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	l2 := <-second
	if l2 == nil {
		t.FailNow()
	}
	if li := next("second leader"); li != l2.Info() {
		t.Fatalf("observed %+v, want %+v", li, l2.Info())
	}
	if err := l2.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if li := next("no leader"); li != (LeaderInfo{}) {
		t.Fatalf("observed %+v after the last leader resigned, want none", li)
	}
	// Close ends the channel.
	obs.Close()
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("value after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Observe channel not closed by Close")
	}
}

// A Campaign whose ctx ends returns at once and leaves no candidate key.
func TestCampaignCancelled(t *testing.T) {
	srv := etcdtest.Start(t, "")
	c1, c2 := connect(t, srv), connect(t, srv)
	l1 := campaign(t, c1, "jm-1")
	ctx := ctxT(t, 300*time.Millisecond)
	start := time.Now()
	if _, err := c2.Campaign(ctx, LeaderInfo{ID: "jm-2"}); err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("Campaign with an ending ctx = %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Campaign returned %v after its ctx ended", d)
	}
	rctx := ctxT(t, 10*time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := c1.cli.Get(rctx, c1.keys.leaderPrefix()+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Count == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d election keys remain after the cancelled campaign, want 1", resp.Count)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := l1.SaveJob(rctx, "j", nil); err != nil {
		t.Fatal(err)
	}
}

// Close of a leading client resigns: the standby wins well before the TTL.
func TestCloseResigns(t *testing.T) {
	srv := etcdtest.Start(t, "")
	c1, c2 := connect(t, srv), connect(t, srv)
	l1 := campaign(t, c1, "jm-1")
	second := campaignAsync(t, c2, "jm-2")
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	closeTook := time.Since(start)
	waitClosed(t, l1.Done(), 100*time.Millisecond, "Done after Close")
	l2 := <-second
	if l2 == nil {
		t.FailNow()
	}
	if d := time.Since(start); d > testTTL {
		t.Fatalf("standby won %v after Close, not before the TTL %v", d, testTTL)
	}
	t.Logf("Close took %v; standby won %v after it began", closeTook, time.Since(start))
	if _, err := c1.Campaign(ctxT(t, time.Second), LeaderInfo{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Campaign after Close = %v, want ErrClosed", err)
	}
}
