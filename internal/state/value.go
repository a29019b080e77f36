package state

import (
	"fmt"

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
func RegisterValue[K comparable, V any](b *KeyedBackend[K], name string, c codec.Codec[V]) (ValueState[V], error) {
	desc := fmt.Sprintf("%s of %T", kindValue, *new(V))
	if s, ok, err := lookup[*valueState[K, V]](b, name, desc); ok || err != nil {
		return s, err
	}
	s := &valueState[K, V]{b: b, core: newCore[K, V](b, name, kindValue, desc, c.Append, c.Decode)}
	if err := b.add(s); err != nil {
		return nil, err
	}
	return s, nil
}

// newCore builds a state's table keyed by the backend's keys.
func newCore[K comparable, S any](b *KeyedBackend[K], name string, k kind, desc string,
	encS func([]byte, S) []byte, decS func([]byte) (S, int, error)) core[K, S] {
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
