package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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

// observed records the leader etcd reports.
func (s *leaderState) observed(l LeaderInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
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
// again.
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
	defer stopObserving()
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
	backoff := campaignMinBackoff
	for ctx.Err() == nil {
		rs.standby(st.rest)
		sb := serveStandby(hl.view(), self, st.current, log)
		l, err := cfg.HA.Campaign(ctx, self)
		sb.stop()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			log.Warn("campaign for leadership failed; trying again", "in", backoff, "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, campaignMaxBackoff)
			continue
		}
		backoff = campaignMinBackoff
		st.setLeading(l.Term())
		log.Info("JobManager leads", "term", l.Term(), "rpc", self.RPCAddress, "rest", self.RESTAddress)
		termCtx, endTerm := context.WithCancel(ctx)
		watching := make(chan struct{})
		go func() {
			defer close(watching)
			select {
			case <-l.Done():
				// Say so at once: the term's jobs take a while to stop,
				// and REST must not claim a leadership etcd took back.
				st.setLeading(0)
				endTerm()
			case <-termCtx.Done():
			}
		}()
		err = serveTerm(termCtx, cfg, term{ln: hl.view(), rest: rs, store: haJobStore{ha: cfg.HA, l: l}, lead: l, status: st})
		lost := ctx.Err() == nil
		endTerm()
		<-watching
		st.setLeading(0)
		if err != nil {
			log.Error("serving the term failed", "term", l.Term(), "error", err)
		}
		// Resign so a standby takes over at once (a shutdown, a failed
		// term); after a lost lease it is a no-op.
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = l.Resign(rctx)
		cancel()
		if lost {
			log.Warn("JobManager lost the leadership: its jobs are suspended (the next leader recovers them from their newest registered checkpoints); standing by", "term", l.Term())
		}
	}
	log.Info("JobManager stopped")
	return nil
}
