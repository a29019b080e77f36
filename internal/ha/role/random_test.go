package role

import (
	"errors"
	"github.com/weirstream/weir/internal/testutil/coretest"
	"math/rand/v2"
	"testing"
	"time"
)

// env is a driver that performs the Machine's actions and checks the
// invariants of the package doc on each one.
type env struct {
	t    *testing.T
	seed uint64
	m    *Machine

	standby     bool  // the standby server serves
	campaigning bool  // a campaign is in flight
	cancelled   bool  // ... and was cancelled
	retrying    bool  // a retry timer is armed
	serving     int64 // the term served, 0: none
	stopping    bool  // StopTerm sent, TermStopped not yet fed
	exited      bool
	lastTerm    int64
	resigned    map[int64]int
	served      map[int64]bool
}

func (e *env) fatalf(format string, args ...any) {
	e.t.Helper()
	e.t.Fatalf("seed %d: "+format, append([]any{e.seed}, args...)...)
}

func (e *env) step(ev Event) {
	e.t.Helper()
	if e.exited {
		if acts := e.m.Step(ev); len(acts) > 0 {
			e.fatalf("actions %v after exit", acts)
		}
		return
	}
	for _, a := range e.m.Step(ev) {
		switch a := a.(type) {
		case ServeStandby:
			if e.standby || e.serving != 0 {
				e.fatalf("serve-standby while standby %v, term %d", e.standby, e.serving)
			}
			e.standby = true
		case StopStandby:
			if !e.standby {
				e.fatalf("stop-standby while it does not serve")
			}
			e.standby = false
		case Campaign:
			if e.campaigning || e.serving != 0 {
				e.fatalf("campaign while campaigning %v, term %d", e.campaigning, e.serving)
			}
			e.campaigning, e.cancelled = true, false
		case CancelCampaign:
			if !e.campaigning {
				e.fatalf("cancel-campaign without one")
			}
			e.cancelled = true
		case RetryAfter:
			if e.retrying || e.campaigning {
				e.fatalf("retry-after while retrying %v, campaigning %v", e.retrying, e.campaigning)
			}
			if a.Delay <= 0 || a.Delay > 400*time.Millisecond {
				e.fatalf("retry delay %s out of bounds", a.Delay)
			}
			e.retrying = true
		case CancelRetry:
			e.retrying = false
		case ServeTerm:
			if e.serving != 0 || e.standby || e.campaigning {
				e.fatalf("serve-term %d while term %d, standby %v, campaigning %v", a.Term, e.serving, e.standby, e.campaigning)
			}
			if e.served[a.Term] {
				e.fatalf("term %d served twice", a.Term)
			}
			e.serving, e.served[a.Term] = a.Term, true
		case StopTerm:
			if a.Term != e.serving || e.stopping {
				e.fatalf("stop-term %d while serving %d (stopping %v)", a.Term, e.serving, e.stopping)
			}
			e.stopping = true
		case Resign:
			e.resigned[a.Term]++
			if e.resigned[a.Term] > 1 {
				e.fatalf("term %d resigned twice", a.Term)
			}
			if a.Term == e.serving {
				e.fatalf("term %d resigned while it serves", a.Term)
			}
		case Exit:
			if e.campaigning || e.serving != 0 || e.standby || e.retrying {
				e.fatalf("exit with campaign %v, term %d, standby %v, retry %v", e.campaigning, e.serving, e.standby, e.retrying)
			}
			e.exited = true
		}
	}
}

// TestRandom drives the Machine through random interleavings of campaign
// results, lost leases, stopping terms, retries and a shutdown, checking
// the invariants on every action, and that it exits once everything in
// flight has answered. A failure names its seed; rerun it with -seed.
func TestRandom(t *testing.T) {
	var terms, failures, lost int
	coretest.Seeds{First: 1, N: 500}.Run(t, func(seed uint64) {
		rng := rand.New(rand.NewPCG(seed, 7))
		e := &env{t: t, seed: seed, m: New(Config{MinBackoff: 100 * time.Millisecond, MaxBackoff: 400 * time.Millisecond}),
			resigned: map[int64]int{}, served: map[int64]bool{}}
		e.step(Start{})
		shutdownAt := 20 + rng.IntN(60)
		for i := 0; i < 200 && !e.exited; i++ {
			if i == shutdownAt {
				e.step(Shutdown{})
				continue
			}
			switch rng.IntN(6) {
			case 0, 1:
				if e.campaigning {
					e.campaigning = false
					if rng.IntN(3) > 0 && !e.cancelled {
						e.lastTerm += 1 + int64(rng.IntN(3))
						terms++
						e.step(Elected{Term: e.lastTerm})
					} else {
						failures++
						e.step(CampaignFailed{Err: errors.New("etcd away")})
					}
				}
			case 2:
				if e.retrying {
					e.retrying = false
					e.step(RetryDue{})
				}
			case 3:
				if e.serving != 0 && rng.IntN(2) == 0 {
					lost++
					e.step(LeaseLost{Term: e.serving})
				} else {
					e.step(LeaseLost{Term: e.lastTerm + 100}) // stale or unknown
				}
			case 4:
				if e.stopping {
					term := e.serving
					e.serving, e.stopping = 0, false
					e.step(TermStopped{Term: term})
					if e.resigned[term] != 1 {
						e.fatalf("term %d stopped without its resignation", term)
					}
				}
			case 5:
				if e.serving != 0 && !e.stopping && rng.IntN(8) == 0 {
					// The term fails by itself.
					term := e.serving
					e.serving = 0
					e.step(TermStopped{Term: term})
				} else if rng.IntN(10) == 0 {
					e.step(TermStopped{Term: e.lastTerm + 50}) // not the served term
				}
			}
		}
		// Answer whatever is in flight: the machine must exit.
		if !e.exited {
			e.step(Shutdown{})
		}
		for i := 0; i < 10 && !e.exited; i++ {
			switch {
			case e.campaigning:
				e.campaigning = false
				e.step(CampaignFailed{})
			case e.retrying:
				e.retrying = false
				e.step(RetryDue{})
			case e.stopping:
				term := e.serving
				e.serving, e.stopping = 0, false
				e.step(TermStopped{Term: term})
			}
		}
		if !e.exited {
			e.fatalf("no exit after shutdown with everything answered: state %s", e.m.State())
		}
		for term := range e.served {
			if e.resigned[term] != 1 {
				e.fatalf("served term %d resigned %d times", term, e.resigned[term])
			}
		}
	})
	if !coretest.Single() && (terms == 0 || failures == 0 || lost == 0) {
		t.Fatalf("the runs did not cover elections (%d), failed campaigns (%d) and lost leases (%d)", terms, failures, lost)
	}
}
