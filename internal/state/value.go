package state

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/codec"
)

type valueState[K comparable, V any] struct {
	b *KeyedBackend[K]
	core[K, V]
}

// RegisterValue returns the value state called name, creating it on first
// use. Registering the same name again with the same types returns the same
// state; another kind or type is an error wrapping ErrStateMismatch.
// Restored bytes waiting for the state are decoded now.
// With WithTTL among opts, values expire (see TTLConfig).
func RegisterValue[K comparable, V any](b Backend[K], name string, c codec.Codec[V], opts ...RegisterOption) (ValueState[V], error) {
	o := options(opts)
	if o.ttl == nil {
		return registerValue(b, name, c, KindValue, fmt.Sprintf("%s of %T", KindValue, *new(V)), 0)
	}
	t, err := newTTL(b, name, *o.ttl)
	if err != nil {
		return nil, err
	}
	inner, err := registerValue(b, name, stampedCodec(c), KindValue|KindTTL, fmt.Sprintf("%s of %T", KindValue|KindTTL, *new(V)), o.ttl.TTL)
	if err != nil {
		return nil, err
	}
	if hs, ok := inner.(*valueState[K, stamped[V]]); ok {
		hs.prune = pruneStamped[V](t)
	}
	return &ttlValue[V]{ttl: t, s: inner}, nil
}

func registerValue[K comparable, V any](b Backend[K], name string, c codec.Codec[V], kind Kind, desc string, ttl time.Duration) (ValueState[V], error) {
	hb, err := heapOr(b, name)
	if err != nil || hb == nil {
		if err != nil {
			return nil, err
		}
		return registerRaw[ValueState[V]](b, StateSpec{
			Name: name, Kind: kind, Desc: desc, ValueLen: lenOf(c), TTL: ttl,
			Wrap: func(raw any) any { return &rawValue[V]{name: name, raw: raw.(RawValue), c: c} },
		})
	}
	return registerHeapValue(hb, name, kind, desc, c)
}

func registerHeapValue[K comparable, V any](b *KeyedBackend[K], name string, kind Kind, desc string, c codec.Codec[V]) (ValueState[V], error) {
	if s, ok, err := lookup[*valueState[K, V]](b, name, desc); ok || err != nil {
		return s, err
	}
	s := &valueState[K, V]{b: b, core: newCore[K, V](b, name, kind, desc, appendIgnoring(c), c.Decode)}
	if err := b.add(s); err != nil {
		return nil, err
	}
	return s, nil
}

// newCore builds a state's table keyed by the backend's keys.
func newCore[K comparable, S any](b *KeyedBackend[K], name string, k Kind, desc string,
	encS func([]byte, S, *entrySorter) []byte, decS func([]byte) (S, int, error)) core[K, S] {
	return core[K, S]{
		name: name, kind: k, desc: desc,
		tab:  newTable[K, S](b.cow, b.kgs.Len()),
		encK: b.keys.Append, decK: b.keys.Decode,
		encS: encS, decS: decS,
	}
}

func (s *valueState[K, V]) Value() (V, bool) { return s.tab.get(s.b.cur, s.b.key) }

func (s *valueState[K, V]) Update(v V) { s.tab.mut(s.b.cur)[s.b.key] = v }

func (s *valueState[K, V]) Clear() { s.tab.remove(s.b.cur, s.b.key) }

// appendIgnoring adapts a codec's Append to a core's encS.
func appendIgnoring[V any](c codec.Codec[V]) func([]byte, V, *entrySorter) []byte {
	return func(dst []byte, v V, _ *entrySorter) []byte { return c.Append(dst, v) }
}
