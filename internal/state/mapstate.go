package state

import (
	"fmt"
	"iter"
	"maps"
	"time"

	"github.com/weirstream/weir/internal/codec"
)

// mapCell is one key's user map. owner is the epoch the inner map was made
// or cloned in: a snapshot taken since may hold it, so it is cloned before
// its first write after that snapshot, like a key group's map (see cow).
type mapCell[UK comparable, UV any] struct {
	m     map[UK]UV
	owner uint64
}

type mapState[K comparable, UK comparable, UV any] struct {
	b *KeyedBackend[K]
	core[K, mapCell[UK, UV]]
}

// RegisterMap returns the map state called name, creating it on first use;
// kc and vc encode its user keys and values. Registering the same name again
// with the same types returns the same state; another kind or type is an
// error wrapping ErrStateMismatch.
// With WithTTL among opts, each entry expires on its own (see TTLConfig).
func RegisterMap[K comparable, UK comparable, UV any](b Backend[K], name string, kc codec.Codec[UK], vc codec.Codec[UV], opts ...RegisterOption) (MapState[UK, UV], error) {
	o := options(opts)
	kind := KindMap
	if o.ttl != nil {
		kind |= KindTTL
	}
	kr, vr, err := keyedMapReaders(b, name, kind, kc, vc, o.migrations)
	if err != nil {
		return nil, err
	}
	if o.ttl == nil {
		return registerMap(b, name, kr, vr, KindMap, fmt.Sprintf("%s of %T to %T", KindMap, *new(UK), *new(UV)), 0)
	}
	t, err := newTTL(b, name, *o.ttl)
	if err != nil {
		return nil, err
	}
	inner, err := registerMap(b, name, kr, stampedReader(vr), KindMap|KindTTL, fmt.Sprintf("%s of %T to %T", KindMap|KindTTL, *new(UK), *new(UV)), o.ttl.TTL)
	if err != nil {
		return nil, err
	}
	if hs, ok := inner.(*mapState[K, UK, stamped[UV]]); ok {
		hs.prune = pruneMap[UK, UV](t)
	}
	return &ttlMap[UK, UV]{ttl: t, s: inner}, nil
}

func registerMap[K comparable, UK comparable, UV any](b Backend[K], name string, kr reader[UK], vr reader[UV], kind Kind, desc string, ttl time.Duration) (MapState[UK, UV], error) {
	hb, err := heapOr(b, name)
	if err != nil || hb == nil {
		if err != nil {
			return nil, err
		}
		kc, vc := kr.own, vr.own
		return registerRaw[MapState[UK, UV]](b, StateSpec{
			Name: name, Kind: kind, Desc: desc, TTL: ttl,
			ValueLen: lenOf(vr.old), UserKeyLen: lenOf(kr.old), Convert: converter(vr), ConvertUserKey: converter(kr),
			Wrap: func(raw any) any {
				return &rawMap[UK, UV]{name: name, raw: raw.(RawMap), kc: newLocalCodec(kc), vc: newLocalCodec(vc)}
			},
		})
	}
	return registerHeapMap(hb, name, kind, desc, kr, vr)
}

func registerHeapMap[K comparable, UK comparable, UV any](b *KeyedBackend[K], name string, kind Kind, desc string, kr reader[UK], vr reader[UV]) (MapState[UK, UV], error) {
	if s, ok, err := lookup[*mapState[K, UK, UV]](b, name, desc); ok || err != nil {
		return s, err
	}
	kc, vc := kr.own, vr.own
	// Entries are written sorted by encoded user key (see entrySorter).
	enc := func(dst []byte, c mapCell[UK, UV], srt *entrySorter) []byte {
		srt.reset()
		for k, v := range c.m {
			k0 := len(srt.buf)
			srt.buf = kc.Append(srt.buf, k)
			v0 := len(srt.buf)
			srt.buf = vc.Append(srt.buf, v)
			srt.mark(k0, v0)
		}
		return srt.appendSorted(dst)
	}
	dec := func(src []byte) (mapCell[UK, UV], int, error) {
		count, n, err := readCount(src)
		if err != nil {
			return mapCell[UK, UV]{}, 0, err
		}
		m := make(map[UK]UV, min(count, len(src)-n))
		for range count {
			k, kn, err := kr.old.Decode(src[n:])
			if err != nil {
				return mapCell[UK, UV]{}, 0, err
			}
			n += kn
			v, vn, err := vr.old.Decode(src[n:])
			if err != nil {
				return mapCell[UK, UV]{}, 0, err
			}
			n += vn
			m[k] = v
		}
		// Fresh map: no snapshot holds it, so the current epoch owns it.
		return mapCell[UK, UV]{m: m, owner: b.cow.epoch}, n, nil
	}
	s := &mapState[K, UK, UV]{b: b, core: newCore(b, name, kind, desc, enc, dec)}
	if err := b.add(s); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *mapState[K, UK, UV]) cell() map[UK]UV {
	c, _ := s.tab.get(s.b.cur, s.b.key, s.b.h)
	return c.m
}

// writable returns the current key's user map, ready for writing.
func (s *mapState[K, UK, UV]) writable() map[UK]UV {
	c, ok := s.tab.slot(s.b.cur, s.b.key, s.b.h)
	if !ok {
		*c = mapCell[UK, UV]{m: make(map[UK]UV), owner: s.b.cow.epoch}
	} else if s.b.cow.mustCopy(&c.owner) {
		c.m = maps.Clone(c.m)
	}
	return c.m
}

func (s *mapState[K, UK, UV]) Get(k UK) (UV, bool) {
	v, ok := s.cell()[k]
	return v, ok
}

func (s *mapState[K, UK, UV]) Put(k UK, v UV) {
	if s.b.seq == noKey {
		s.b.refuse(s.name)
		return
	}
	s.writable()[k] = v
}

func (s *mapState[K, UK, UV]) Remove(k UK) {
	if s.b.seq == noKey {
		s.b.refuse(s.name)
		return
	}
	if _, ok := s.cell()[k]; !ok {
		return
	}
	m := s.writable()
	delete(m, k)
	if len(m) == 0 {
		s.tab.remove(s.b.cur, s.b.key, s.b.h)
	}
}

func (s *mapState[K, UK, UV]) Contains(k UK) bool {
	_, ok := s.cell()[k]
	return ok
}

func (s *mapState[K, UK, UV]) All() iter.Seq2[UK, UV] {
	// Capture the map now: a write during the iteration clones it or
	// writes a map the iteration does not see, per Go's map semantics.
	m := s.cell()
	return func(yield func(UK, UV) bool) {
		for k, v := range m {
			if !yield(k, v) {
				return
			}
		}
	}
}

func (s *mapState[K, UK, UV]) Len() int { return len(s.cell()) }

func (s *mapState[K, UK, UV]) Clear() {
	if s.b.seq == noKey {
		s.b.refuse(s.name)
		return
	}
	s.tab.remove(s.b.cur, s.b.key, s.b.h)
}
