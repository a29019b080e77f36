package weir

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/state"
)

// StateTTL gives keyed state a time to live (Flink's StateTtlConfig): each
// value — each list element, each map entry — expires TTL after its last
// renewing access, by processing time. Expired values are never returned
// (unless Visibility says otherwise), are removed when a read finds them,
// are left out of full snapshots, and the lsm backend also removes them in
// a background pass. It bounds the state of unbounded joins and
// per-user aggregates whose keys go quiet.
type StateTTL struct {
	TTL time.Duration
	// Update says which accesses renew a value (default: writes only).
	Update TTLUpdate
	// Visibility says whether a read may see an expired value not yet
	// removed (default: never).
	Visibility TTLVisibility
}

// TTLUpdate says which accesses renew a value's time to live.
type TTLUpdate uint8

const (
	// OnCreateAndWrite renews a value when it is written.
	OnCreateAndWrite TTLUpdate = iota
	// OnReadAndWrite renews it when it is read too.
	OnReadAndWrite
)

// TTLVisibility says whether a read may return an expired value.
type TTLVisibility uint8

const (
	// NeverReturnExpired hides expired values.
	NeverReturnExpired TTLVisibility = iota
	// ReturnExpiredIfNotCleanedUp returns an expired value a read still
	// finds, once (the read removes it).
	ReturnExpiredIfNotCleanedUp
)

// StateOption changes how GetValueState and friends register a state,
// and how ValueStateOf and friends declare it: WithTTL, WithMigration.
type StateOption struct {
	apply func(*stateOptions)
}

type stateOptions struct {
	reg []state.RegisterOption
	err error
}

// WithTTL gives the state a time to live. TTL state is stored with
// timestamps: turning TTL on or off for a state that is in a checkpoint
// is refused at restore (change the state's name to start it afresh).
func WithTTL(ttl StateTTL) StateOption {
	return StateOption{func(o *stateOptions) {
		if ttl.TTL <= 0 {
			o.err = fmt.Errorf("WithTTL: the time to live %v must be positive", ttl.TTL)
			return
		}
		o.reg = append(o.reg, state.WithTTL(state.TTLConfig{TTL: ttl.TTL, Update: state.TTLUpdate(ttl.Update), Visibility: state.TTLVisibility(ttl.Visibility)}))
	}}
}

func stateOpts(name string, opts []StateOption) ([]state.RegisterOption, error) {
	var o stateOptions
	for _, opt := range opts {
		if opt.apply != nil {
			opt.apply(&o)
		}
	}
	if o.err != nil {
		return nil, fmt.Errorf("state %q: %w", name, o.err)
	}
	return o.reg, nil
}

// ttlClocked is a backend that gives TTL state its clock.
type ttlClocked interface{ SetTTLClock(now func() int64) }
