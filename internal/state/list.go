package state

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/codec"
)

// listState stores each key's list as a slice that is only ever appended to
// or replaced, never written below its length; see the package doc for why
// that makes appends invisible to snapshots without copying.
type listState[K comparable, V any] struct {
	b *KeyedBackend[K]
	core[K, []V]
}

// RegisterList returns the list state called name, creating it on first
// use. Registering the same name again with the same types returns the same
// state; another kind or type is an error wrapping ErrStateMismatch.
// With WithTTL among opts, each element expires on its own (see
// TTLConfig).
func RegisterList[K comparable, V any](b Backend[K], name string, c codec.Codec[V], opts ...RegisterOption) (ListState[V], error) {
	o := options(opts)
	kind := KindList
	if o.ttl != nil {
		kind |= KindTTL
	}
	rd, err := keyedValueReader(b, name, kind, c, o.migrations)
	if err != nil {
		return nil, err
	}
	if o.ttl == nil {
		return registerList(b, name, rd, KindList, fmt.Sprintf("%s of %T", KindList, *new(V)), 0)
	}
	t, err := newTTL(b, name, *o.ttl)
	if err != nil {
		return nil, err
	}
	inner, err := registerList(b, name, stampedReader(rd), KindList|KindTTL, fmt.Sprintf("%s of %T", KindList|KindTTL, *new(V)), o.ttl.TTL)
	if err != nil {
		return nil, err
	}
	if hs, ok := inner.(*listState[K, stamped[V]]); ok {
		hs.prune = pruneList[V](t)
	}
	return &ttlList[V]{ttl: t, s: inner}, nil
}

func registerList[K comparable, V any](b Backend[K], name string, rd reader[V], kind Kind, desc string, ttl time.Duration) (ListState[V], error) {
	hb, err := heapOr(b, name)
	if err != nil || hb == nil {
		if err != nil {
			return nil, err
		}
		c := rd.own
		return registerRaw[ListState[V]](b, StateSpec{
			Name: name, Kind: kind, Desc: desc, ValueLen: lenOf(rd.old), Convert: converter(rd), TTL: ttl,
			Wrap: func(raw any) any { return &rawList[V]{name: name, raw: raw.(RawList), c: newLocalCodec(c)} },
		})
	}
	return registerHeapList(hb, name, kind, desc, rd)
}

func registerHeapList[K comparable, V any](b *KeyedBackend[K], name string, kind Kind, desc string, rd reader[V]) (ListState[V], error) {
	if s, ok, err := lookup[*listState[K, V]](b, name, desc); ok || err != nil {
		return s, err
	}
	c, old := rd.own, rd.old
	enc := func(dst []byte, vs []V, _ *entrySorter) []byte {
		dst = binary.AppendUvarint(dst, uint64(len(vs)))
		for _, v := range vs {
			dst = c.Append(dst, v)
		}
		return dst
	}
	dec := func(src []byte) ([]V, int, error) {
		count, n, err := readCount(src)
		if err != nil {
			return nil, 0, err
		}
		vs := make([]V, 0, min(count, len(src)-n))
		for range count {
			v, m, err := old.Decode(src[n:])
			if err != nil {
				return nil, 0, err
			}
			vs = append(vs, v)
			n += m
		}
		return vs, n, nil
	}
	s := &listState[K, V]{b: b, core: newCore(b, name, kind, desc, enc, dec)}
	if err := b.add(s); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *listState[K, V]) Get() []V {
	vs, _ := s.tab.get(s.b.cur, s.b.key, s.b.h)
	return vs[:len(vs):len(vs)] // full slice: a caller's append copies
}

func (s *listState[K, V]) Add(v V) {
	if s.b.seq == noKey {
		s.b.refuse(s.name)
		return
	}
	p, _ := s.tab.slot(s.b.cur, s.b.key, s.b.h)
	*p = append(*p, v)
}

func (s *listState[K, V]) AddAll(vs []V) {
	if s.b.seq == noKey {
		s.b.refuse(s.name)
		return
	}
	if len(vs) == 0 {
		return
	}
	p, _ := s.tab.slot(s.b.cur, s.b.key, s.b.h)
	*p = append(*p, vs...)
}

func (s *listState[K, V]) Update(vs []V) {
	if s.b.seq == noKey {
		s.b.refuse(s.name)
		return
	}
	if len(vs) == 0 {
		s.Clear()
		return
	}
	s.tab.set(s.b.cur, s.b.key, s.b.h, append([]V(nil), vs...))
}

func (s *listState[K, V]) Clear() {
	if s.b.seq == noKey {
		s.b.refuse(s.name)
		return
	}
	s.tab.remove(s.b.cur, s.b.key, s.b.h)
}
