package ha

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// LeaderInfo is what a leader publishes: JSON in its election key's value.
type LeaderInfo struct {
	ID          string `json:"id"` // the JobManager's id
	RPCAddress  string `json:"rpc_address"`
	RESTAddress string `json:"rest_address"`
	// Term is the election key's create revision, filled in by Leader,
	// Observe and Leadership.Info (the stored JSON carries 0: the
	// revision is known only once the key exists). 0 means no leader.
	Term int64 `json:"term"`
}

// Campaign blocks until this process leads, ctx ends, or its lease is
// lost while it waits (etcd unreachable for longer than LeaseTTL); then
// campaign again. It grants a lease of LeaseTTL, keeps it alive in a
// concurrency.Session and campaigns with concurrency.Election on
// <root>/leader. Candidates win in the order they started campaigning.
func (c *Client) Campaign(ctx context.Context, info LeaderInfo) (*Leadership, error) {
	if c.isClosed() {
		return nil, fmt.Errorf("ha: campaign: %w", ErrClosed)
	}
	info.Term = 0
	val, err := json.Marshal(info)
	if err != nil {
		return nil, fmt.Errorf("ha: campaign: %w", err)
	}
	ttl := c.cfg.leaseSeconds()
	// Bounded: a campaign that cannot get a lease within a lease's TTL
	// fails and is retried (and logged) by the caller, rather than wait
	// silently on an unreachable or stalled etcd.
	gctx, gcancel := context.WithTimeout(ctx, time.Duration(ttl)*time.Second)
	grant, err := c.cli.Grant(gctx, int64(ttl))
	gcancel()
	if err != nil {
		return nil, fmt.Errorf("ha: campaign: grant a lease of %d s: %w", ttl, err)
	}
	// The session lives as long as the client (its context is the
	// client's), not as long as ctx: the lease must outlive Campaign.
	sess, err := concurrency.NewSession(c.cli, concurrency.WithLease(grant.ID), concurrency.WithTTL(ttl))
	if err != nil {
		c.revokeQuietly(grant.ID)
		return nil, fmt.Errorf("ha: campaign: keep lease alive: %w", err)
	}
	el := concurrency.NewElection(sess, c.keys.leaderPrefix())

	// Election.Campaign ends on its context, which ends with ctx or the
	// session: a lease lost while waiting must not let waitDeletes report
	// a win for a key that expired. On a cancelled context it resigns
	// with the client's context, which blocks while etcd is unreachable;
	// so it runs in its own goroutine and Campaign returns on ctx at once.
	cctx, cancel := context.WithCancel(ctx)
	stopAfter := context.AfterFunc(sess.Ctx(), cancel)
	won := make(chan error) // unbuffered: a win is handed over or abandoned, never both
	abandoned := make(chan struct{})
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer cancel()
		defer stopAfter()
		err := el.Campaign(cctx, string(val))
		if err != nil {
			c.dropSession(sess, nil)
		}
		select {
		case won <- err:
		case <-abandoned:
			if err == nil {
				// Won just as the caller gave up: give the term back.
				c.dropSession(sess, el)
			}
		}
	}()
	select {
	case err = <-won:
	case <-ctx.Done():
		close(abandoned)
		return nil, fmt.Errorf("ha: campaign: %w", ctx.Err())
	case <-sess.Done():
		// Election.Campaign is resigning with the client's context, which
		// waits for etcd; do not wait with it.
		close(abandoned)
		return nil, fmt.Errorf("ha: campaign: the lease expired while waiting (etcd unreachable for longer than the lease TTL %d s?); campaign again: %w", ttl, ErrNotLeader)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("ha: campaign: %w", ctx.Err())
		}
		select {
		case <-sess.Done():
			return nil, fmt.Errorf("ha: campaign: the lease expired while waiting (etcd unreachable for longer than the lease TTL %d s?); campaign again: %w", ttl, err)
		default:
		}
		return nil, fmt.Errorf("ha: campaign: %w", err)
	}

	// Election.Campaign can return after the lease expired (the expiry
	// deletes our key too, which satisfies its wait): check that the key
	// is still ours before claiming the term.
	term, key := el.Rev(), el.Key()
	resp, err := c.cli.Get(ctx, key)
	if err == nil && (len(resp.Kvs) != 1 || resp.Kvs[0].CreateRevision != term || clientv3.LeaseID(resp.Kvs[0].Lease) != sess.Lease()) {
		err = fmt.Errorf("the election key %s of term %d is gone (lease lost while campaigning); campaign again: %w", key, term, ErrNotLeader)
	}
	// Renew the lease once more, so the term starts with a known
	// deadline: the lease lives at least ka.TTL from before this call.
	expires := time.Now()
	if err == nil {
		var ka *clientv3.LeaseKeepAliveResponse
		ka, err = c.cli.KeepAliveOnce(ctx, sess.Lease())
		if err == nil && ka.TTL <= 0 {
			err = fmt.Errorf("the lease of term %d expired while campaigning; campaign again: %w", term, ErrNotLeader)
		}
		if err == nil {
			expires = expires.Add(time.Duration(ka.TTL) * time.Second)
		}
	}
	if err != nil {
		c.dropSession(sess, el)
		return nil, fmt.Errorf("ha: campaign: %w", err)
	}
	info.Term = term
	lctx, lcancel := context.WithCancel(c.ctx)
	l := &Leadership{
		c: c, info: info, key: key, sess: sess, el: el,
		done: make(chan struct{}), stop: lcancel,
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		lcancel()
		c.dropSession(sess, el)
		return nil, fmt.Errorf("ha: campaign: %w", ErrClosed)
	}
	c.leading[l] = struct{}{}
	c.wg.Add(1)
	c.mu.Unlock()
	go l.monitor(lctx, resp.Header.Revision, expires)
	c.log.Info("ha: leading", "term", term, "id", info.ID, "key", key)
	return l, nil
}

// dropSession stops renewing a session's lease and revokes it (deleting
// its election key), within LeaseTTL and not after Close began; if etcd
// does not answer, the lease expires by itself. el, if not nil, is
// resigned first.
func (c *Client) dropSession(sess *concurrency.Session, el *concurrency.Election) {
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.LeaseTTL)
	defer cancel()
	if el != nil {
		_ = el.Resign(ctx)
	}
	sess.Orphan()
	_, _ = c.cli.Revoke(ctx, sess.Lease())
}

func (c *Client) revokeQuietly(id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.LeaseTTL)
	defer cancel()
	_, _ = c.cli.Revoke(ctx, id)
}

// Leader returns the current leader; ErrNoLeader if none. The leader is
// the candidate whose key was created first, so right after a term ends
// this may name the next candidate a moment before its Campaign returns.
func (c *Client) Leader(ctx context.Context) (LeaderInfo, error) {
	info, err := c.leader(ctx)
	if err != nil {
		return LeaderInfo{}, fmt.Errorf("ha: leader: %w", err)
	}
	if info.Term == 0 {
		return LeaderInfo{}, fmt.Errorf("ha: leader: %w", ErrNoLeader)
	}
	return info, nil
}

// leader reads the first-created election key: a zero LeaderInfo if none.
func (c *Client) leader(ctx context.Context) (LeaderInfo, error) {
	resp, err := c.cli.Get(ctx, c.keys.leaderPrefix()+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return LeaderInfo{}, err
	}
	if len(resp.Kvs) == 0 {
		return LeaderInfo{}, nil
	}
	return decodeLeader(resp.Kvs[0])
}

func decodeLeader(kv *mvccpb.KeyValue) (LeaderInfo, error) {
	var info LeaderInfo
	if err := json.Unmarshal(kv.Value, &info); err != nil {
		return LeaderInfo{}, fmt.Errorf("election key %s holds %q, not a leader's JSON: %w", kv.Key, kv.Value, err)
	}
	info.Term = kv.CreateRevision
	return info, nil
}

// Observe sends the current leader first (a zero LeaderInfo, Term 0, when
// there is none) and then every change, until ctx ends or the client
// closes; then the channel closes. A slow reader misses intermediate
// leaders, never the newest. While etcd is unreachable nothing is sent:
// the last value stays the best knowledge.
func (c *Client) Observe(ctx context.Context) <-chan LeaderInfo {
	out := make(chan LeaderInfo)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		close(out)
		return out
	}
	c.wg.Add(1)
	c.mu.Unlock()
	go c.observe(ctx, out)
	return out
}

func (c *Client) observe(ctx context.Context, out chan<- LeaderInfo) {
	defer c.wg.Done()
	defer close(out)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()

	var (
		last, cur   LeaderInfo
		sent        bool // last holds a value sent
		wch         clientv3.WatchChan
		watchCancel = func() {}
		backoff     = 50 * time.Millisecond
	)
	defer func() { watchCancel() }()
	// refresh reads the leader and replaces the watch by one that starts
	// after that read.
	refresh := func() bool {
		watchCancel() // the old watcher would buffer events nobody reads
		for {
			resp, err := c.cli.Get(ctx, c.keys.leaderPrefix()+"/", clientv3.WithFirstCreate()...)
			if err == nil {
				cur = LeaderInfo{}
				if len(resp.Kvs) > 0 {
					cur, err = decodeLeader(resp.Kvs[0])
				}
				if err == nil {
					var wctx context.Context
					wctx, watchCancel = context.WithCancel(ctx)
					wch = c.cli.Watch(clientv3.WithRequireLeader(wctx), c.keys.leaderPrefix()+"/",
						clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
					backoff = 50 * time.Millisecond
					return true
				}
			}
			c.log.Warn("ha: observe leader", "err", err)
			select {
			case <-ctx.Done():
				return false
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
		}
	}
	if !refresh() {
		return
	}
	for {
		var send chan<- LeaderInfo
		if !sent || cur != last {
			send = out
		}
		select {
		case <-ctx.Done():
			return
		case send <- cur:
			last, sent = cur, true
		case wr, ok := <-wch:
			if !ok || wr.Err() != nil || len(wr.Events) > 0 {
				// Any change of the candidates (or a broken watch) may
				// change the first-created key: read it again.
				if !refresh() {
					return
				}
			}
		}
	}
}

// Leadership is one term of this process as leader.
type Leadership struct {
	c    *Client
	info LeaderInfo
	key  string // the election key
	sess *concurrency.Session
	el   *concurrency.Election

	done     chan struct{}
	doneOnce sync.Once
	stop     context.CancelFunc // ends monitor

	mu       sync.Mutex
	reason   string // why the term ended, for errors
	resigned bool
}

// Term is the fencing token: the create revision of the election key,
// strictly increasing across terms of a cluster.
func (l *Leadership) Term() int64 { return l.info.Term }

// Info is what this leader published, Term filled in.
func (l *Leadership) Info() LeaderInfo { return l.info }

// Done is closed when the term ends: the lease is lost (expired, revoked,
// not renewed for LeaseTTL while etcd is unreachable), the election key
// is deleted, a fenced write finds the term over, or after Resign or
// Close. The process must stop acting as leader then. It closes a little
// before the lease can expire in etcd (see monitor), but the etcd fence,
// not Done, is what makes a deposed leader harmless.
func (l *Leadership) Done() <-chan struct{} { return l.done }

// lose ends the term locally. Idempotent; the first reason sticks.
func (l *Leadership) lose(reason string) {
	l.doneOnce.Do(func() {
		l.mu.Lock()
		l.reason = reason
		l.mu.Unlock()
		close(l.done)
		l.c.log.Warn("ha: leadership lost", "term", l.info.Term, "reason", reason)
	})
}

func (l *Leadership) lost() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// notLeader is the error of a write refused because the term is over.
func (l *Leadership) notLeader() error {
	l.mu.Lock()
	reason := l.reason
	l.mu.Unlock()
	if reason == "" {
		reason = "its election key is gone"
	}
	return fmt.Errorf("term %d is over (%s): another JobManager leads or will: %w", l.info.Term, reason, ErrNotLeader)
}

// Resign ends the term: Done closes first (stop acting), then the
// election key is deleted and the lease revoked, so a standby wins at
// once. If etcd does not answer within ctx the lease expires by itself
// after LeaseTTL. Only the first call does anything.
func (l *Leadership) Resign(ctx context.Context) error {
	l.mu.Lock()
	first := !l.resigned
	l.resigned = true
	l.mu.Unlock()
	l.lose("resigned")
	l.stop()
	if !first {
		return nil
	}
	// Also after the term ended otherwise: the key may still exist until
	// the lease expires, and deleting it (only if it is this term's) and
	// revoking the lease lets a standby win now.
	var errs []error
	if err := l.el.Resign(ctx); err != nil {
		errs = append(errs, err)
	}
	l.sess.Orphan()
	if _, err := l.c.cli.Revoke(ctx, l.sess.Lease()); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("ha: resign term %d (the lease expires within %d s anyway): %w", l.info.Term, l.c.cfg.leaseSeconds(), err)
	}
	l.c.log.Info("ha: resigned", "term", l.info.Term)
	return nil
}

// monitor ends the term when the lease or the key goes, until stop.
//
// The lease: concurrency.Session's Done closes when clientv3's keepalive
// gives up, which is a response with TTL ≤ 0 (revoked or expired) or no
// response for the granted TTL, checked once a second. That deadline
// counts from when a response arrived, after etcd renewed the lease, so
// it can pass after etcd expired the lease. monitor therefore listens to
// the keepalive responses itself and steps down when none arrived for
// TTL − margin (margin = TTL/10, at least 100 ms, covering the time from
// etcd's renewal to our receipt), before etcd can expire the lease and
// elect another. The first deadline is that of Campaign's last renewal
// (expires). Keepalives go out about every TTL/3 (clientv3 checks every
// 500 ms), so with a 10 s TTL two may be lost without a step-down.
//
// The key: a watch sees it deleted (by hand, or with the lease before the
// keepalive says so); a broken watch is replaced after a check that the
// key is still this term's.
func (l *Leadership) monitor(ctx context.Context, fromRev int64, expires time.Time) {
	c := l.c
	defer c.wg.Done()
	defer func() {
		// The term is over either way: stop renewing and forget it.
		// Resign and Close revoke; a lost lease needs no revocation.
		l.sess.Orphan()
		c.mu.Lock()
		delete(c.leading, l)
		c.mu.Unlock()
	}()
	ttl := time.Duration(c.cfg.leaseSeconds()) * time.Second
	margin := max(ttl/10, 100*time.Millisecond)
	deadline := time.NewTimer(time.Until(expires.Add(-margin)))
	defer deadline.Stop()

	// This listener must end with monitor: a registered keepalive
	// channel renews the lease, and a term that stepped down must let it
	// expire, also when etcd comes back.
	kctx, kcancel := context.WithCancel(ctx)
	defer kcancel()
	kach, err := c.cli.KeepAlive(kctx, l.sess.Lease())
	if err != nil {
		l.lose("keepalive: " + err.Error())
		return
	}
	watchCancel := func() {}
	defer func() { watchCancel() }()
	watch := func(rev int64) clientv3.WatchChan {
		var wctx context.Context
		wctx, watchCancel = context.WithCancel(ctx)
		return c.cli.Watch(wctx, l.key, clientv3.WithRev(rev))
	}
	wch := watch(fromRev + 1)
	type check struct {
		rev int64
		err error
	}
	var checkc chan check
	// lose ends the term unless monitor was stopped: stopping cancels ctx,
	// which also ends the keepalive and may close the session, and select
	// picks among ready cases at random; a stopped monitor must not then
	// declare the term lost (Resign and Close end it themselves).
	lose := func(reason string) {
		if ctx.Err() == nil {
			l.lose(reason)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.done:
			return
		case <-l.sess.Done():
			lose("lease keepalive ended: lease expired, revoked or not expires for the TTL")
			return
		case ka, ok := <-kach:
			if !ok {
				lose("lease keepalive ended: lease expired, revoked or not expires for the TTL")
				return
			}
			deadline.Reset(time.Duration(ka.TTL)*time.Second - margin)
		case <-deadline.C:
			lose(fmt.Sprintf("lease not expires for %s of its %s TTL (etcd unreachable?)", ttl-margin, ttl))
			return
		case wr, ok := <-wch:
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE || ev.Kv.CreateRevision != l.info.Term {
					lose("election key deleted")
					return
				}
			}
			if ok && wr.Err() == nil {
				continue
			}
			// The watch broke (compaction, cancellation): check the key
			// without blocking this loop, then watch again after the read.
			watchCancel()
			wch = nil
			checkc = make(chan check, 1)
			c.wg.Add(1) // monitor holds a count, so Close's Wait cannot have returned
			go func(ch chan<- check) {
				defer c.wg.Done()
				resp, err := c.cli.Get(ctx, l.key)
				if err != nil {
					ch <- check{err: err}
					return
				}
				if len(resp.Kvs) != 1 || resp.Kvs[0].CreateRevision != l.info.Term {
					ch <- check{err: errors.New("election key deleted")}
					return
				}
				ch <- check{rev: resp.Header.Revision}
			}(checkc)
		case r := <-checkc:
			checkc = nil
			if r.err != nil {
				if ctx.Err() != nil {
					return
				}
				l.lose(r.err.Error())
				return
			}
			wch = watch(r.rev + 1)
		}
	}
}
