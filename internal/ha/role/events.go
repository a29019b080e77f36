package role

import (
	"fmt"
	"time"
)

// Event is an input of the Machine.
type Event interface{ isEvent() }

// Start begins standing by.
type Start struct{}

// Elected: the campaign won; Term is the fencing token.
type Elected struct{ Term int64 }

// CampaignFailed: the campaign returned without winning (etcd away, the
// session's lease lost while waiting).
type CampaignFailed struct{ Err error }

// RetryDue: the delay of RetryAfter passed.
type RetryDue struct{}

// LeaseLost: the term's lease expired or could not be renewed.
type LeaseLost struct{ Term int64 }

// TermStopped: the served term stopped (its jobs suspended, its
// Dispatcher released the port).
type TermStopped struct{ Term int64 }

// Shutdown: the process stops.
type Shutdown struct{}

func (Start) isEvent()          {}
func (Elected) isEvent()        {}
func (CampaignFailed) isEvent() {}
func (RetryDue) isEvent()       {}
func (LeaseLost) isEvent()      {}
func (TermStopped) isEvent()    {}
func (Shutdown) isEvent()       {}

// Action is an output of the Machine, for the driver to perform in order.
type Action interface {
	isAction()
	fmt.Stringer
}

// ServeStandby serves the rpc port with the standby server.
type ServeStandby struct{}

// StopStandby stops the standby server.
type StopStandby struct{}

// Campaign starts a campaign; its result comes back as Elected or
// CampaignFailed.
type Campaign struct{}

// CancelCampaign cancels the campaign in flight; it still answers with
// Elected or CampaignFailed.
type CancelCampaign struct{}

// RetryAfter arms a timer that feeds RetryDue after Delay.
type RetryAfter struct{ Delay time.Duration }

// CancelRetry disarms the timer of RetryAfter.
type CancelRetry struct{}

// ServeTerm serves Term: the Dispatcher, the jobs recovered from HA.
type ServeTerm struct{ Term int64 }

// StopTerm stops serving Term (its jobs suspended, not failed); Lost says
// the lease is gone. TermStopped answers.
type StopTerm struct {
	Term int64
	Lost bool
}

// Resign gives Term's leadership back (deletes its election key).
type Resign struct{ Term int64 }

// Exit is the last action after Shutdown: nothing is in flight.
type Exit struct{}

func (ServeStandby) isAction()   {}
func (StopStandby) isAction()    {}
func (Campaign) isAction()       {}
func (CancelCampaign) isAction() {}
func (RetryAfter) isAction()     {}
func (CancelRetry) isAction()    {}
func (ServeTerm) isAction()      {}
func (StopTerm) isAction()       {}
func (Resign) isAction()         {}
func (Exit) isAction()           {}

func (ServeStandby) String() string   { return "serve-standby" }
func (StopStandby) String() string    { return "stop-standby" }
func (Campaign) String() string       { return "campaign" }
func (CancelCampaign) String() string { return "cancel-campaign" }
func (a RetryAfter) String() string   { return fmt.Sprintf("retry-after %s", a.Delay) }
func (CancelRetry) String() string    { return "cancel-retry" }
func (a ServeTerm) String() string    { return fmt.Sprintf("serve-term %d", a.Term) }
func (a StopTerm) String() string {
	if a.Lost {
		return fmt.Sprintf("stop-term %d lost", a.Term)
	}
	return fmt.Sprintf("stop-term %d", a.Term)
}
func (a Resign) String() string { return fmt.Sprintf("resign %d", a.Term) }
func (Exit) String() string     { return "exit" }
