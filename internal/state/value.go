package state

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/codec"
)

type valueState[K comparable, V any] struct {
	b *KeyedBackend[K]
	core[K, V]
	// hit is where Value found the current key's value, so that the
	// Update of a read-modify-write writes there without probing again.
	hit struct {
		seq   uint64 // the backend's key sequence at the Value
		moves uint32 // the table's moves at the Value
		pos   int
	}
}

// RegisterValue returns the value state called name, creating it on first
// use. Registering the same name again with the same types returns the same
// state; another kind or type is an error wrapping ErrStateMismatch.
// Restored bytes waiting for the state are decoded now.
// With WithTTL among opts, values expire (see TTLConfig).
func RegisterValue[K comparable, V any](b Backend[K], name string, c codec.Codec[V], opts ...RegisterOption) (ValueState[V], error) {
	o := options(opts)
	kind := KindValue
	if o.ttl != nil {
		kind |= KindTTL
	}
	rd, err := keyedValueReader(b, name, kind, c, o.migrations)
	if err != nil {
		return nil, err
	}
	if o.ttl == nil {
		return registerValue(b, name, rd, KindValue, fmt.Sprintf("%s of %T", KindValue, *new(V)), 0)
	}
	t, err := newTTL(b, name, *o.ttl)
	if err != nil {
		return nil, err
	}
	inner, err := registerValue(b, name, stampedReader(rd), KindValue|KindTTL, fmt.Sprintf("%s of %T", KindValue|KindTTL, *new(V)), o.ttl.TTL)
	if err != nil {
		return nil, err
	}
	if hs, ok := inner.(*valueState[K, stamped[V]]); ok {
		hs.prune = pruneStamped[V](t)
	}
	return &ttlValue[V]{ttl: t, s: inner}, nil
}

func registerValue[K comparable, V any](b Backend[K], name string, rd reader[V], kind Kind, desc string, ttl time.Duration) (ValueState[V], error) {
	hb, err := heapOr(b, name)
	if err != nil || hb == nil {
		if err != nil {
			return nil, err
		}
		c := rd.own
		return registerRaw[ValueState[V]](b, StateSpec{
			Name: name, Kind: kind, Desc: desc, ValueLen: lenOf(rd.old), Convert: converter(rd), TTL: ttl,
			Wrap: func(raw any) any { return &rawValue[V]{name: name, raw: raw.(RawValue), c: newLocalCodec(c)} },
		})
	}
	return registerHeapValue(hb, name, kind, desc, rd)
}

func registerHeapValue[K comparable, V any](b *KeyedBackend[K], name string, kind Kind, desc string, rd reader[V]) (ValueState[V], error) {
	if s, ok, err := lookup[*valueState[K, V]](b, name, desc); ok || err != nil {
		return s, err
	}
	s := &valueState[K, V]{b: b, core: newCore[K, V](b, name, kind, desc, appendIgnoring(rd.own), rd.old.Decode)}
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
		tab:  newTable[K, S](b.cow, b.hash, b.kgs.Len()),
		encK: b.keys.Append, decK: b.keys.Decode,
		encS: encS, decS: decS,
	}
}

func (s *valueState[K, V]) Value() (V, bool) {
	t := &s.tab.groups[s.b.cur].htab
	i, ok := t.find(s.b.key, s.b.h)
	if !ok {
		var zero V
		return zero, false
	}
	s.hit.seq, s.hit.moves, s.hit.pos = s.b.seq, t.moves, i
	return t.slots[i].v, true
}

// Update writes where Value found the value if neither the current key nor
// the table's layout changed since: a read-modify-write probes once.
func (s *valueState[K, V]) Update(v V) {
	if s.b.seq == noKey {
		s.b.refuse(s.name)
		return
	}
	t := s.tab.writable(s.b.cur) // a copy-on-write clone keeps positions
	if s.hit.seq == s.b.seq && s.hit.moves == t.moves {
		t.slots[s.hit.pos].v = v
		return
	}
	p, _ := t.slot(s.b.key, s.b.h, s.tab.hash)
	*p = v
}

func (s *valueState[K, V]) Clear() {
	if s.b.seq == noKey {
		s.b.refuse(s.name)
		return
	}
	s.tab.remove(s.b.cur, s.b.key, s.b.h)
}

// appendIgnoring adapts a codec's Append to a core's encS.
func appendIgnoring[V any](c codec.Codec[V]) func([]byte, V, *entrySorter) []byte {
	return func(dst []byte, v V, _ *entrySorter) []byte { return c.Append(dst, v) }
}
