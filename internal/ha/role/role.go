package role

import (
	"fmt"
	"time"
)

// Config configures a Machine.
type Config struct {
	// MinBackoff and MaxBackoff bound the wait before a failed campaign is
	// tried again; it doubles from MinBackoff after each failure.
	MinBackoff, MaxBackoff time.Duration
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.MinBackoff <= 0 || c.MaxBackoff < c.MinBackoff {
		return fmt.Errorf("role: backoff %s to %s: want 0 < min <= max", c.MinBackoff, c.MaxBackoff)
	}
	return nil
}

// State is a JobManager's role.
type State int

const (
	// Idle: not started.
	Idle State = iota
	// Standby: serving the standby server, campaigning or waiting to.
	Standby
	// Leading: serving a term.
	Leading
	// SteppingDown: the term is stopping (lease lost, or shutdown).
	SteppingDown
	// Stopped: shut down; no action follows.
	Stopped
)

func (s State) String() string {
	return [...]string{"idle", "standby", "leading", "stepping-down", "stopped"}[s]
}

// Machine is a JobManager's role under high availability.
type Machine struct {
	cfg   Config
	state State
	// term is the served term (Leading, SteppingDown).
	term int64
	// campaigning: a Campaign is in flight; retrying: a RetryAfter is.
	campaigning, retrying bool
	// shutdown: Shutdown arrived; the machine stops once nothing is in
	// flight.
	shutdown bool
	backoff  time.Duration
	// lost: the served term's lease was lost (StopTerm says so).
	lost bool
	out  []Action
}

// New returns a Machine in Idle.
func New(cfg Config) *Machine {
	return &Machine{cfg: cfg, backoff: cfg.MinBackoff}
}

// State returns the role.
func (m *Machine) State() State { return m.state }

// Term returns the served term, 0 when none.
func (m *Machine) Term() int64 {
	if m.state == Leading || m.state == SteppingDown {
		return m.term
	}
	return 0
}

// Step feeds one event and returns the actions to perform, in order.
func (m *Machine) Step(ev Event) []Action {
	m.out = nil
	switch ev := ev.(type) {
	case Start:
		if m.state == Idle {
			m.standby()
		}
	case Elected:
		m.elected(ev.Term)
	case CampaignFailed:
		m.campaigning = false
		switch {
		case m.shutdown:
			m.maybeStop()
		case m.state == Standby:
			m.emit(RetryAfter{Delay: m.backoff})
			m.retrying = true
			m.backoff = min(2*m.backoff, m.cfg.MaxBackoff)
		}
	case RetryDue:
		if !m.retrying {
			return nil
		}
		m.retrying = false
		if m.state == Standby && !m.shutdown {
			m.campaign()
		} else {
			m.maybeStop()
		}
	case LeaseLost:
		if m.state == Leading && ev.Term == m.term {
			m.state = SteppingDown
			m.lost = true
			m.emit(StopTerm{Term: m.term, Lost: true})
		}
	case TermStopped:
		if (m.state != SteppingDown && m.state != Leading) || ev.Term != m.term {
			return nil
		}
		// From Leading: the term stopped by itself (it failed to serve);
		// it is given back like a stopped one.
		m.emit(Resign{Term: m.term})
		m.term, m.lost = 0, false
		if m.shutdown {
			m.state = Standby // nothing serves; maybeStop ends it
			m.maybeStop()
			break
		}
		m.standby()
	case Shutdown:
		if m.shutdown || m.state == Stopped {
			return nil
		}
		m.shutdown = true
		switch m.state {
		case Idle:
			m.state = Stopped
			m.emit(Exit{})
		case Standby:
			m.emit(StopStandby{})
			if m.campaigning {
				m.emit(CancelCampaign{})
			}
			m.maybeStop()
		case Leading:
			m.state = SteppingDown
			m.emit(StopTerm{Term: m.term})
		}
	}
	return m.out
}

func (m *Machine) emit(a Action) { m.out = append(m.out, a) }

// standby serves the standby server and campaigns.
func (m *Machine) standby() {
	m.state = Standby
	m.emit(ServeStandby{})
	m.campaign()
}

func (m *Machine) campaign() {
	m.campaigning = true
	m.emit(Campaign{})
}

func (m *Machine) elected(term int64) {
	if !m.campaigning {
		return // no campaign asked for it: not possible with a driver that follows the actions
	}
	m.campaigning = false
	if m.shutdown || m.state != Standby {
		// Won while shutting down: give it back at once.
		m.emit(Resign{Term: term})
		m.maybeStop()
		return
	}
	m.backoff = m.cfg.MinBackoff
	m.state, m.term = Leading, term
	m.emit(StopStandby{})
	m.emit(ServeTerm{Term: term})
}

// maybeStop ends a shut-down machine once no campaign, retry or term is in
// flight.
func (m *Machine) maybeStop() {
	if !m.shutdown || m.campaigning || m.state == Leading || m.state == SteppingDown || m.state == Stopped {
		return
	}
	if m.retrying {
		m.emit(CancelRetry{})
		m.retrying = false
	}
	m.state = Stopped
	m.emit(Exit{})
}
