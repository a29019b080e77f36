package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/weirstream/weir/internal/codec"
)

// TTLUpdate says which accesses renew a value's time to live.
type TTLUpdate uint8

const (
	// UpdateOnCreateAndWrite renews a value when it is written.
	UpdateOnCreateAndWrite TTLUpdate = iota
	// UpdateOnReadAndWrite also renews it when it is read.
	UpdateOnReadAndWrite
)

// TTLVisibility says whether a read may see an expired value.
type TTLVisibility uint8

const (
	// NeverReturnExpired hides expired values.
	NeverReturnExpired TTLVisibility = iota
	// ReturnExpiredIfNotCleanedUp returns an expired value that a read
	// finds (and removes); later reads no longer see it.
	ReturnExpiredIfNotCleanedUp
)

// TTLConfig is the time to live of a state's values, given at registration
// with WithTTL. Each value (each list element, each map entry) carries the
// time of its last renewing access, from the backend's TTL clock
// (SetTTLClock, processing time in milliseconds), and expires TTL later.
// Expired values are removed when a read finds them.
type TTLConfig struct {
	TTL        time.Duration
	Update     TTLUpdate
	Visibility TTLVisibility
}

// RegisterOption changes how RegisterValue and friends register a state.
type RegisterOption func(*registerOptions)

type registerOptions struct {
	ttl        *TTLConfig
	migrations []Migration
}

// WithTTL gives the state a time to live. A state registered with TTL is
// stored as (last-access timestamp, value) and is another kind of state in
// checkpoints: restoring it from a checkpoint written without TTL, or the
// reverse, is an error wrapping ErrStateMismatch that names the state.
func WithTTL(cfg TTLConfig) RegisterOption {
	return func(o *registerOptions) { o.ttl = &cfg }
}

func options(opts []RegisterOption) registerOptions {
	var o registerOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// KindTTL is the flag that marks a state kind as stored with time to live.
const KindTTL Kind = 0x80

// Base is the kind without its TTL flag.
func (k Kind) Base() Kind { return k &^ KindTTL }

// HasTTL reports whether the kind's values carry timestamps.
func (k Kind) HasTTL() bool {
	return k&KindTTL != 0 && k.Base() >= KindValue && k.Base() <= KindReducing
}

// ttlClock is implemented by backends that give TTL states their clock.
type ttlClock interface{ TTLClock() func() int64 }

// ttl is a TTL state's configuration and clock.
type ttl struct {
	ms     int64
	update TTLUpdate
	vis    TTLVisibility
	now    func() int64
}

func newTTL[K comparable](b Backend[K], name string, cfg TTLConfig) (*ttl, error) {
	if cfg.TTL < time.Millisecond {
		return nil, fmt.Errorf("register state %q: TTL %v is below a millisecond: give a TTL of at least 1ms", name, cfg.TTL)
	}
	c, ok := b.(ttlClock)
	var now func() int64
	if ok {
		now = c.TTLClock()
	}
	if now == nil {
		return nil, fmt.Errorf("register state %q with TTL: %w", name, errNoTTLClock)
	}
	return &ttl{ms: cfg.TTL.Milliseconds(), update: cfg.Update, vis: cfg.Visibility, now: now}, nil
}

var errNoTTLClock = errors.New("the backend has no TTL clock: call SetTTLClock on it before registering")

// expired reports whether a value stamped at ts has expired at now.
func (t *ttl) expired(ts, now int64) bool { return now-ts >= t.ms }

// pruneStamped, pruneList and pruneMap are the heap backend's snapshot
// cleanup (core.prune): they drop what expired by the snapshot's time.
func pruneStamped[V any](t *ttl) func(stamped[V], int64) (stamped[V], bool) {
	return func(s stamped[V], now int64) (stamped[V], bool) { return s, !t.expired(s.ts, now) }
}

func pruneList[V any](t *ttl) func([]stamped[V], int64) ([]stamped[V], bool) {
	return func(l []stamped[V], now int64) ([]stamped[V], bool) {
		live := 0
		for _, e := range l {
			if !t.expired(e.ts, now) {
				live++
			}
		}
		if live == len(l) {
			return l, live > 0
		}
		out := make([]stamped[V], 0, live) // on the writer goroutine; the state's slice is shared
		for _, e := range l {
			if !t.expired(e.ts, now) {
				out = append(out, e)
			}
		}
		return out, live > 0
	}
}

func pruneMap[UK comparable, UV any](t *ttl) func(mapCell[UK, stamped[UV]], int64) (mapCell[UK, stamped[UV]], bool) {
	return func(c mapCell[UK, stamped[UV]], now int64) (mapCell[UK, stamped[UV]], bool) {
		live := 0
		for _, e := range c.m {
			if !t.expired(e.ts, now) {
				live++
			}
		}
		if live == len(c.m) {
			return c, live > 0
		}
		out := make(map[UK]stamped[UV], live)
		for k, e := range c.m {
			if !t.expired(e.ts, now) {
				out[k] = e
			}
		}
		return mapCell[UK, stamped[UV]]{m: out, owner: c.owner}, live > 0
	}
}

// stamped is a value with the time of its last renewing access.
type stamped[V any] struct {
	ts int64
	v  V
}

// stampedCodec encodes a stamped value as zigzag-varint(ts) then the value.
func stampedCodec[V any](c codec.Codec[V]) codec.Codec[stamped[V]] { return stampCodec[V]{c} }

type stampCodec[V any] struct{ c codec.Codec[V] }

func (s stampCodec[V]) Append(dst []byte, v stamped[V]) []byte {
	return s.c.Append(binary.AppendVarint(dst, v.ts), v.v)
}

func (s stampCodec[V]) Decode(src []byte) (stamped[V], int, error) {
	ts, n := binary.Varint(src)
	if n <= 0 {
		return stamped[V]{}, 0, fmt.Errorf("TTL timestamp: bad varint: %w", codec.ErrCorrupt)
	}
	v, m, err := s.c.Decode(src[n:])
	if err != nil {
		return stamped[V]{}, 0, err
	}
	return stamped[V]{ts: ts, v: v}, n + m, nil
}

type ttlValue[V any] struct {
	*ttl
	s ValueState[stamped[V]]
}

func (s *ttlValue[V]) Value() (V, bool) {
	var zero V
	sv, ok := s.s.Value()
	if !ok {
		return zero, false
	}
	now := s.now()
	if s.expired(sv.ts, now) {
		s.s.Clear()
		if s.vis == ReturnExpiredIfNotCleanedUp {
			return sv.v, true
		}
		return zero, false
	}
	if s.update == UpdateOnReadAndWrite {
		s.s.Update(stamped[V]{ts: now, v: sv.v})
	}
	return sv.v, true
}

func (s *ttlValue[V]) Update(v V) { s.s.Update(stamped[V]{ts: s.now(), v: v}) }
func (s *ttlValue[V]) Clear()     { s.s.Clear() }

type ttlReducing[V any] struct {
	*ttl
	s ReducingState[stamped[V]]
}

// ttlReducer wraps reduce for stamped values: the result takes the new
// value's stamp, and an expired old value is dropped, not folded in.
func ttlReducer[V any](t *ttl, reduce func(a, b V) V) func(a, b stamped[V]) stamped[V] {
	return func(a, b stamped[V]) stamped[V] {
		if t.expired(a.ts, b.ts) {
			return b
		}
		return stamped[V]{ts: b.ts, v: reduce(a.v, b.v)}
	}
}

func (s *ttlReducing[V]) Get() (V, bool) {
	var zero V
	sv, ok := s.s.Get()
	if !ok {
		return zero, false
	}
	now := s.now()
	if s.expired(sv.ts, now) {
		s.s.Clear()
		if s.vis == ReturnExpiredIfNotCleanedUp {
			return sv.v, true
		}
		return zero, false
	}
	if s.update == UpdateOnReadAndWrite {
		// Renew by folding nothing in: clear and add the value back.
		s.s.Clear()
		s.s.Add(stamped[V]{ts: now, v: sv.v})
	}
	return sv.v, true
}

func (s *ttlReducing[V]) Add(v V) { s.s.Add(stamped[V]{ts: s.now(), v: v}) }
func (s *ttlReducing[V]) Clear()  { s.s.Clear() }

// ttlList stamps each element on its own. Get returns a fresh slice of
// the live elements and, when it found expired ones, writes the list back
// without them.
type ttlList[V any] struct {
	*ttl
	s ListState[stamped[V]]
}

func (s *ttlList[V]) Get() []V {
	l := s.s.Get()
	if len(l) == 0 {
		return nil
	}
	now := s.now()
	out := make([]V, 0, len(l))
	live := l[:0:0]
	dropped := false
	for _, e := range l {
		if s.expired(e.ts, now) {
			dropped = true
			if s.vis == ReturnExpiredIfNotCleanedUp {
				out = append(out, e.v)
			}
			continue
		}
		out = append(out, e.v)
		if s.update == UpdateOnReadAndWrite {
			e.ts = now
		}
		live = append(live, e)
	}
	if dropped || s.update == UpdateOnReadAndWrite {
		s.s.Update(live) // empty clears
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (s *ttlList[V]) Add(v V) { s.s.Add(stamped[V]{ts: s.now(), v: v}) }

func (s *ttlList[V]) AddAll(vs []V) {
	if len(vs) == 0 {
		return
	}
	now := s.now()
	st := make([]stamped[V], len(vs))
	for i, v := range vs {
		st[i] = stamped[V]{ts: now, v: v}
	}
	s.s.AddAll(st)
}

func (s *ttlList[V]) Update(vs []V) {
	now := s.now()
	st := make([]stamped[V], len(vs))
	for i, v := range vs {
		st[i] = stamped[V]{ts: now, v: v}
	}
	s.s.Update(st)
}

func (s *ttlList[V]) Clear() { s.s.Clear() }

// ttlMap stamps each entry on its own.
type ttlMap[UK comparable, UV any] struct {
	*ttl
	s MapState[UK, stamped[UV]]
}

func (s *ttlMap[UK, UV]) Get(k UK) (UV, bool) {
	var zero UV
	sv, ok := s.s.Get(k)
	if !ok {
		return zero, false
	}
	now := s.now()
	if s.expired(sv.ts, now) {
		s.s.Remove(k)
		if s.vis == ReturnExpiredIfNotCleanedUp {
			return sv.v, true
		}
		return zero, false
	}
	if s.update == UpdateOnReadAndWrite {
		s.s.Put(k, stamped[UV]{ts: now, v: sv.v})
	}
	return sv.v, true
}

func (s *ttlMap[UK, UV]) Put(k UK, v UV) { s.s.Put(k, stamped[UV]{ts: s.now(), v: v}) }
func (s *ttlMap[UK, UV]) Remove(k UK)    { s.s.Remove(k) }
func (s *ttlMap[UK, UV]) Clear()         { s.s.Clear() }

func (s *ttlMap[UK, UV]) Contains(k UK) bool {
	_, ok := s.Get(k)
	return ok
}

// All yields the live entries, removing expired ones it meets (removal
// during the iteration is allowed by MapState).
func (s *ttlMap[UK, UV]) All() iter.Seq2[UK, UV] {
	return func(yield func(UK, UV) bool) {
		now := s.now()
		for k, sv := range s.s.All() {
			if s.expired(sv.ts, now) {
				s.s.Remove(k)
				if s.vis != ReturnExpiredIfNotCleanedUp {
					continue
				}
			} else if s.update == UpdateOnReadAndWrite {
				s.s.Put(k, stamped[UV]{ts: now, v: sv.v})
			}
			if !yield(k, sv.v) {
				return
			}
		}
	}
}

// Len counts the live entries, removing expired ones.
func (s *ttlMap[UK, UV]) Len() int {
	n := 0
	now := s.now()
	for k, sv := range s.s.All() {
		if s.expired(sv.ts, now) {
			s.s.Remove(k)
			continue
		}
		n++
	}
	return n
}
