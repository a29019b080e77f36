package state

import (
	"errors"
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/codec"
)

type reducingState[K comparable, V any] struct {
	b      *KeyedBackend[K]
	reduce func(a, b V) V
	core[K, V]
}

// RegisterReducing returns the reducing state called name, creating it on
// first use with the given reduce function (which must be associative and
// deterministic). Registering the same name again with the same types
// returns the same state and keeps the first reduce function.
// With WithTTL among opts, the reduced value expires (see TTLConfig); an
// Add to an expired value starts afresh.
func RegisterReducing[K comparable, V any](b Backend[K], name string, reduce func(a, b V) V, c codec.Codec[V], opts ...RegisterOption) (ReducingState[V], error) {
	if reduce == nil {
		return nil, fmt.Errorf("register reducing state %q: %w", name, errors.New("nil reduce function: pass one"))
	}
	o := options(opts)
	kind := KindReducing
	if o.ttl != nil {
		kind |= KindTTL
	}
	rd, err := keyedValueReader(b, name, kind, c, o.migrations)
	if err != nil {
		return nil, err
	}
	if o.ttl == nil {
		return registerReducing(b, name, reduce, rd, KindReducing, fmt.Sprintf("%s of %T", KindReducing, *new(V)), 0)
	}
	t, err := newTTL(b, name, *o.ttl)
	if err != nil {
		return nil, err
	}
	inner, err := registerReducing(b, name, ttlReducer(t, reduce), stampedReader(rd), KindReducing|KindTTL, fmt.Sprintf("%s of %T", KindReducing|KindTTL, *new(V)), o.ttl.TTL)
	if err != nil {
		return nil, err
	}
	if hs, ok := inner.(*reducingState[K, stamped[V]]); ok {
		hs.prune = pruneStamped[V](t)
	}
	return &ttlReducing[V]{ttl: t, s: inner}, nil
}

func registerReducing[K comparable, V any](b Backend[K], name string, reduce func(a, b V) V, rd reader[V], kind Kind, desc string, ttl time.Duration) (ReducingState[V], error) {
	hb, err := heapOr(b, name)
	if err != nil || hb == nil {
		if err != nil {
			return nil, err
		}
		c := rd.own
		return registerRaw[ReducingState[V]](b, StateSpec{
			Name: name, Kind: kind, Desc: desc, TTL: ttl, ValueLen: lenOf(rd.old), Convert: converter(rd),
			Wrap: func(raw any) any {
				return &rawReducing[V]{rawValue: rawValue[V]{name: name, raw: raw.(RawValue), c: newLocalCodec(c)}, reduce: reduce}
			},
		})
	}
	return registerHeapReducing(hb, name, kind, desc, reduce, rd)
}

func registerHeapReducing[K comparable, V any](b *KeyedBackend[K], name string, kind Kind, desc string, reduce func(a, b V) V, rd reader[V]) (ReducingState[V], error) {
	if s, ok, err := lookup[*reducingState[K, V]](b, name, desc); ok || err != nil {
		return s, err
	}
	s := &reducingState[K, V]{b: b, reduce: reduce, core: newCore[K, V](b, name, kind, desc, appendIgnoring(rd.own), rd.old.Decode)}
	if err := b.add(s); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *reducingState[K, V]) Get() (V, bool) { return s.tab.get(s.b.cur, s.b.key, s.b.h) }

// Add probes the table once: reduce runs on the entry in place.
func (s *reducingState[K, V]) Add(v V) {
	if s.b.seq == noKey {
		s.b.refuse(s.name)
		return
	}
	if p, ok := s.tab.slot(s.b.cur, s.b.key, s.b.h); ok {
		*p = s.reduce(*p, v)
	} else {
		*p = v
	}
}

func (s *reducingState[K, V]) Clear() {
	if s.b.seq == noKey {
		s.b.refuse(s.name)
		return
	}
	s.tab.remove(s.b.cur, s.b.key, s.b.h)
}
