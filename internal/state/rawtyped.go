package state

import (
	"errors"
	"fmt"
	"iter"

	"github.com/weirstream/weir/internal/codec"
)

// heapOr returns b as the heap backend, or nil if b is a RawBackend; any
// other backend, and an empty name, are errors.
func heapOr[K comparable](b Backend[K], name string) (*KeyedBackend[K], error) {
	if name == "" {
		return nil, errors.New("register state: empty name: give the state a name")
	}
	switch b := b.(type) {
	case *KeyedBackend[K]:
		return b, nil
	case RawBackend:
		return nil, nil
	}
	return nil, fmt.Errorf("register state %q: backend %T stores neither Go values nor bytes (a bug: implement RawBackend)", name, b)
}

// registerRaw registers spec on b (a RawBackend) and returns its typed
// state as T.
func registerRaw[T any, K comparable](b Backend[K], spec StateSpec) (T, error) {
	var zero T
	s, err := b.(RawBackend).RegisterRaw(spec)
	if err != nil {
		return zero, err
	}
	t, ok := s.(T)
	if !ok {
		return zero, fmt.Errorf("register state %q as %s: it is already registered with other Go types; use another name: %w", spec.Name, spec.Desc, ErrStateMismatch)
	}
	return t, nil
}

// lenOf returns the length of c's encoding at the start of src.
func lenOf[V any](c codec.Codec[V]) func([]byte) (int, error) {
	return func(src []byte) (int, error) {
		_, n, err := c.Decode(src)
		if err != nil {
			return 0, asCorrupt(err)
		}
		return n, nil
	}
}

// decodeAll decodes exactly one value from b.
func decodeAll[V any](c codec.Codec[V], b []byte) (V, error) {
	v, n, err := c.Decode(b)
	if err == nil && n != len(b) {
		err = fmt.Errorf("%d bytes after the value: %w", len(b)-n, codec.ErrCorrupt)
	}
	if err != nil {
		return v, asCorrupt(err)
	}
	return v, nil
}

// rawValue is a ValueState over a RawValue: values are encoded with c on
// the way in and decoded on the way out.
type rawValue[V any] struct {
	name string
	raw  RawValue
	c    localCodec[V]
	buf  []byte
}

func (s *rawValue[V]) Value() (V, bool) {
	var zero V
	b, ok := s.raw.Get()
	if !ok {
		return zero, false
	}
	v, err := s.c.decodeAll(b)
	if err != nil {
		s.raw.Fail(fmt.Errorf("state %q: decode value: %w", s.name, err))
		return zero, false
	}
	return v, true
}

func (s *rawValue[V]) Update(v V) {
	s.buf = s.c.append(s.buf[:0], v)
	s.raw.Put(s.buf)
}

func (s *rawValue[V]) Clear() { s.raw.Delete() }

// rawReducing is a ReducingState over a RawValue: Add reads, reduces and
// writes the value.
type rawReducing[V any] struct {
	rawValue[V]
	reduce func(a, b V) V
}

func (s *rawReducing[V]) Get() (V, bool) { return s.Value() }

func (s *rawReducing[V]) Add(v V) {
	if old, ok := s.Value(); ok {
		v = s.reduce(old, v)
	}
	s.Update(v)
}

// rawList is a ListState over a RawList: each element is one frame, so Add
// appends a frame without reading the list.
type rawList[V any] struct {
	name     string
	raw      RawList
	c        localCodec[V]
	buf, elm []byte
}

func (s *rawList[V]) Get() []V {
	b, ok := s.raw.Get()
	if !ok {
		return nil
	}
	var out []V
	for len(b) > 0 {
		e, rest, err := NextFrame(b)
		var v V
		if err == nil {
			v, err = s.c.decodeAll(e)
		}
		if err != nil {
			s.raw.Fail(fmt.Errorf("state %q: decode list element %d: %w", s.name, len(out), err))
			return nil
		}
		out = append(out, v)
		b = rest
	}
	return out
}

func (s *rawList[V]) frame(dst []byte, v V) []byte {
	s.elm = s.c.append(s.elm[:0], v)
	return AppendFrame(dst, s.elm)
}

func (s *rawList[V]) Add(v V) {
	s.buf = s.frame(s.buf[:0], v)
	s.raw.Append(s.buf)
}

func (s *rawList[V]) AddAll(vs []V) {
	if len(vs) == 0 {
		return
	}
	s.buf = s.buf[:0]
	for _, v := range vs {
		s.buf = s.frame(s.buf, v)
	}
	s.raw.Append(s.buf)
}

func (s *rawList[V]) Update(vs []V) {
	if len(vs) == 0 {
		s.Clear()
		return
	}
	s.buf = s.buf[:0]
	for _, v := range vs {
		s.buf = s.frame(s.buf, v)
	}
	s.raw.Put(s.buf)
}

func (s *rawList[V]) Clear() { s.raw.Delete() }

// rawMap is a MapState over a RawMap: one stored entry per user key.
type rawMap[UK comparable, UV any] struct {
	name   string
	raw    RawMap
	kc     localCodec[UK]
	vc     localCodec[UV]
	kb, vb []byte
}

func (s *rawMap[UK, UV]) Get(k UK) (UV, bool) {
	var zero UV
	s.kb = s.kc.append(s.kb[:0], k)
	b, ok := s.raw.Get(s.kb)
	if !ok {
		return zero, false
	}
	v, err := s.vc.decodeAll(b)
	if err != nil {
		s.raw.Fail(fmt.Errorf("state %q: decode map value: %w", s.name, err))
		return zero, false
	}
	return v, true
}

func (s *rawMap[UK, UV]) Put(k UK, v UV) {
	s.kb = s.kc.append(s.kb[:0], k)
	s.vb = s.vc.append(s.vb[:0], v)
	s.raw.Put(s.kb, s.vb)
}

func (s *rawMap[UK, UV]) Remove(k UK) {
	s.kb = s.kc.append(s.kb[:0], k)
	s.raw.Delete(s.kb)
}

func (s *rawMap[UK, UV]) Contains(k UK) bool {
	s.kb = s.kc.append(s.kb[:0], k)
	_, ok := s.raw.Get(s.kb)
	return ok
}

// All yields the entries in the order of their encoded user keys, as of
// the call's start: Puts and Removes during the iteration are allowed and
// not seen by it.
func (s *rawMap[UK, UV]) All() iter.Seq2[UK, UV] {
	return func(yield func(UK, UV) bool) {
		s.raw.Iterate(func(kb, vb []byte) bool {
			k, err := s.kc.decodeAll(kb)
			var v UV
			if err == nil {
				v, err = s.vc.decodeAll(vb)
			}
			if err != nil {
				s.raw.Fail(fmt.Errorf("state %q: decode map entry: %w", s.name, err))
				return false
			}
			return yield(k, v)
		})
	}
}

// Len counts the entries: it reads them all.
func (s *rawMap[UK, UV]) Len() int {
	n := 0
	s.raw.Iterate(func(_, _ []byte) bool { n++; return true })
	return n
}

func (s *rawMap[UK, UV]) Clear() { s.raw.Clear() }
