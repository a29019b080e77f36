package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weirstream/weir/internal/ha/role"
	"github.com/weirstream/weir/internal/rest"
)

// leaderState is what a JobManager under high availability knows of
// leadership: whether it leads, who does, and how often it changed. The
// observer goroutine and the election loop write it; REST and the
// standby server read it.
type leaderState struct {
	self LeaderInfo

	mu      sync.Mutex
	leading bool
	leader  LeaderInfo
	changes int64

	gLeader  prometheus.Gauge
	gTerm    prometheus.Gauge
	cChanges prometheus.Counter
}

func newLeaderState(self LeaderInfo, reg prometheus.Registerer) *leaderState {
	s := &leaderState{
		self: self,
		gLeader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "weir_jobmanager_isLeader",
			Help: "1 while this JobManager leads (high availability), else 0."}),
		gTerm: prometheus.NewGauge(prometheus.GaugeOpts{Name: "weir_jobmanager_leaderTerm",
			Help: "The current leader's term (fencing token) as this JobManager last saw it; 0 while none leads."}),
		cChanges: prometheus.NewCounter(prometheus.CounterOpts{Name: "weir_jobmanager_numberOfLeaderChanges",
			Help: "Leaderships this JobManager has seen begin (any JobManager's)."}),
	}
	reg.MustRegister(s.gLeader, s.gTerm, s.cChanges)
	return s
}

// observed records the leader etcd reports. While this JobManager leads,
// an observation of an older term is stale (the observer reads etcd on
// its own goroutine and can deliver a read made before this term began):
// it must not make REST name the previous leader.
func (s *leaderState) observed(l LeaderInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leading && l.Term < s.leader.Term {
		return
	}
	if l.Term != 0 && l.Term != s.leader.Term {
		s.changes++
		s.cChanges.Inc()
	}
	if l.Term != 0 || !s.leading {
		s.leader = l
	}
	s.gTerm.Set(float64(s.leader.Term))
}

// setLeading records that this JobManager leads in term (0: it stopped).
func (s *leaderState) setLeading(term int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leading = term != 0
	if term != 0 {
		if term != s.leader.Term {
			s.changes++
			s.cChanges.Inc()
		}
		s.leader = s.self
		s.leader.Term = term
		s.gLeader.Set(1)
	} else {
		s.gLeader.Set(0)
		if s.leader.ID == s.self.ID {
			s.leader = LeaderInfo{}
		}
	}
	s.gTerm.Set(float64(s.leader.Term))
}

// current returns the leader as last known.
func (s *leaderState) current() LeaderInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leader
}

// rest is the leadership as GET /overview shows it.
func (s *leaderState) rest() rest.LeaderStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return rest.LeaderStatus{Leader: s.leading, ID: s.leader.ID, RESTAddress: s.leader.RESTAddress, Term: s.leader.Term, Changes: s.changes}
}

// campaignBackoff bounds the wait between failed campaigns (etcd away).
const (
	campaignMinBackoff = 200 * time.Millisecond
	campaignMaxBackoff = 5 * time.Second
)

// runHAJobManager runs a JobManager under high availability until ctx
// ends: it stands by (its rpc port refuses TaskManagers and clients with
// the leader's address, its REST answers /overview and redirects the
// rest) until it is elected, then serves a term as a JobManager without
// high availability would, fenced by its term, until it loses the
// leadership (its lease expired: it was paused, partitioned, or etcd is
// away) — its jobs are then suspended, not failed, and the next leader
// recovers them from their newest registered checkpoints — and stands by
// again. The order of these steps is internal/ha/role's Machine; this is
// its driver: it performs the actions and feeds their results back from
// one loop.
func runHAJobManager(ctx context.Context, cfg JobManagerConfig, ln net.Listener, rs *jmREST) error {
	hl := newHandoffListener(ln)
	defer hl.Close()
	id := cfg.ID
	if id == "" {
		var b [3]byte
		_, _ = rand.Read(b[:])
		id = "jm-" + hex.EncodeToString(b[:])
	}
	self := LeaderInfo{ID: id, RPCAddress: ln.Addr().String()}
	if a := rs.addr(); a != nil {
		self.RESTAddress = a.String()
	}
	st := newLeaderState(self, rs.reg)
	log := cfg.Logger.With("jobmanager", id)
	cfg.Logger = log

	observeCtx, stopObserving := context.WithCancel(ctx)
	observing := make(chan struct{})
	go func() {
		defer close(observing)
		for l := range cfg.HA.Observe(observeCtx) {
			st.observed(l)
		}
	}()
	defer func() { stopObserving(); <-observing }()

	if cfg.Ready != nil {
		cfg.Ready(ln.Addr(), rs.addr())
	}
	log.Info("JobManager standing by for leadership", "rpc", self.RPCAddress, "rest", self.RESTAddress, "state_dir", cfg.StateDir, "ha_storage", cfg.HA.StorageDir())
	d := &roleDriver{cfg: cfg, self: self, hl: hl, rs: rs, st: st, log: log,
		events: make(chan roleEvent, 16), quit: make(chan struct{}), leaderships: map[int64]Leadership{}}
	defer close(d.quit)
	m := role.New(role.Config{MinBackoff: campaignMinBackoff, MaxBackoff: campaignMaxBackoff})
	d.perform(m.Step(role.Start{}))
	shutdown := ctx.Done()
	for m.State() != role.Stopped {
		select {
		case ev := <-d.events:
			if ev.l != nil {
				d.leaderships[ev.l.Term()] = ev.l
			}
			d.perform(m.Step(ev.ev))
		case <-shutdown:
			shutdown = nil
			d.perform(m.Step(role.Shutdown{}))
		}
	}
	log.Info("JobManager stopped")
	return nil
}

// roleEvent is an event for the role Machine; an election carries its
// Leadership along.
type roleEvent struct {
	ev role.Event
	l  Leadership
}

// roleDriver performs the role Machine's actions.
type roleDriver struct {
	cfg  JobManagerConfig
	self LeaderInfo
	hl   *handoffListener
	rs   *jmREST
	st   *leaderState
	log  *slog.Logger

	events chan roleEvent
	quit   chan struct{} // closed when the loop ends: late senders give up

	sb             *standbyServer
	cancelCampaign context.CancelFunc
	retry          *time.Timer
	leaderships    map[int64]Leadership
	endTerm        context.CancelFunc
}

// send feeds an event to the loop from a goroutine.
func (d *roleDriver) send(ev roleEvent) {
	select {
	case d.events <- ev:
	case <-d.quit:
	}
}

func (d *roleDriver) perform(acts []role.Action) {
	for _, a := range acts {
		switch a := a.(type) {
		case role.ServeStandby:
			d.rs.standby(d.st.rest)
			d.sb = serveStandby(d.hl.view(), d.self, d.st.current, d.cfg.TLS, d.log)
		case role.StopStandby:
			d.sb.stop()
			d.sb = nil
		case role.Campaign:
			cctx, cancel := context.WithCancel(context.Background())
			d.cancelCampaign = cancel
			go func() {
				defer cancel()
				l, err := d.cfg.HA.Campaign(cctx, d.self)
				if err != nil {
					if cctx.Err() == nil {
						d.log.Warn("campaign for leadership failed; trying again", "error", err)
					}
					d.send(roleEvent{ev: role.CampaignFailed{Err: err}})
					return
				}
				d.send(roleEvent{ev: role.Elected{Term: l.Term()}, l: l})
			}()
		case role.CancelCampaign:
			d.cancelCampaign()
		case role.RetryAfter:
			d.retry = time.AfterFunc(a.Delay, func() { d.send(roleEvent{ev: role.RetryDue{}}) })
		case role.CancelRetry:
			d.retry.Stop()
		case role.ServeTerm:
			d.serveTerm(a.Term)
		case role.StopTerm:
			if a.Lost {
				// Say so at once: the term's jobs take a while to stop,
				// and REST must not claim a leadership etcd took back.
				d.st.setLeading(0)
				d.log.Warn("JobManager lost the leadership: its jobs are suspended (the next leader recovers them from their newest registered checkpoints); standing by", "term", a.Term)
			}
			d.endTerm()
		case role.Resign:
			// At once after a shutdown, so a standby takes over without
			// waiting out the lease; a no-op after a lost lease.
			l := d.leaderships[a.Term]
			delete(d.leaderships, a.Term)
			d.st.setLeading(0)
			if l != nil {
				rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_ = l.Resign(rctx)
				cancel()
			}
		case role.Exit:
		}
	}
}

// serveTerm serves term in the background; TermStopped answers, and the
// lease's loss is fed as LeaseLost.
func (d *roleDriver) serveTerm(t int64) {
	l := d.leaderships[t]
	d.st.setLeading(t)
	d.log.Info("JobManager leads", "term", t, "rpc", d.self.RPCAddress, "rest", d.self.RESTAddress)
	tctx, cancel := context.WithCancel(context.Background())
	d.endTerm = cancel
	go func() {
		select {
		case <-l.Done():
			d.send(roleEvent{ev: role.LeaseLost{Term: t}})
		case <-tctx.Done():
		}
	}()
	go func() {
		err := serveTerm(tctx, d.cfg, term{ln: d.hl.view(), rest: d.rs, store: haJobStore{ha: d.cfg.HA, l: l}, lead: l, status: d.st})
		if err != nil {
			d.log.Error("serving the term failed", "term", t, "error", err)
		}
		cancel()
		d.send(roleEvent{ev: role.TermStopped{Term: t}})
	}()
}
