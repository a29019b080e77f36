package state

import (
	"errors"
	"fmt"
	"sort"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/codec"
)

// OperatorBackend holds an operator subtask's non-keyed list states, such as
// source offsets and pending sink transactions. They are small by contract,
// so Snapshot encodes them synchronously and the checkpoint metadata carries
// them inline (checkpoint.OperatorSubtaskState.Operator). Like the keyed
// backend it is used only from the task goroutine.
type OperatorBackend struct {
	lists    map[string]operatorState
	restored map[string][][]byte
	schemas  SchemaTable
}

// Schemas returns the state-table rows of the registered lists, and of the
// restored lists never registered (which Snapshot carries over).
func (b *OperatorBackend) Schemas() []checkpoint.StateSchema { return b.schemas.Schemas() }

type operatorState interface {
	encode() [][]byte
	types() string
}

// NewOperatorBackend returns an empty operator backend.
func NewOperatorBackend() *OperatorBackend {
	return &OperatorBackend{lists: map[string]operatorState{}, restored: map[string][][]byte{}}
}

// Restore hands the backend the encoded lists of a checkpoint (state name
// to elements), before the operator registers its states. Registration
// decodes them. Restoring a name that is already registered replaces
// nothing: call Restore first.
func (b *OperatorBackend) Restore(m map[string][][]byte) {
	for name, elems := range m {
		b.restored[name] = elems
	}
}

// OperatorList is a list state of an operator subtask.
type OperatorList[T any] struct {
	c     codec.Codec[T]
	items []T
}

// RegisterOperatorList returns the list state called name, creating it and
// decoding its restored elements on first use. Registering the same name
// with another element type is an error wrapping ErrStateMismatch; restored
// bytes that do not decode give one wrapping codec.ErrCorrupt.
func RegisterOperatorList[T any](b *OperatorBackend, name string, c codec.Codec[T]) (*OperatorList[T], error) {
	desc := fmt.Sprintf("operator list state of %T", *new(T))
	if name == "" {
		return nil, errors.New("register operator state: empty name: give the state a name")
	}
	if s, ok := b.lists[name]; ok {
		l, ok := s.(*OperatorList[T])
		if !ok {
			return nil, fmt.Errorf("register operator state %q as %s: it is already registered as %s; use another name: %w", name, desc, s.types(), ErrStateMismatch)
		}
		return l, nil
	}
	what := fmt.Sprintf("operator list state %q", name)
	row, _ := b.schemas.restoredRow(checkpoint.ScopeOperator, name)
	rd, err := resolveReader(c, row.Value, what, "element")
	if err != nil {
		return nil, err
	}
	l := &OperatorList[T]{c: c}
	for i, raw := range b.restored[name] {
		v, n, err := rd.old.Decode(raw)
		if err == nil && n != len(raw) {
			err = fmt.Errorf("%d trailing bytes: %w", len(raw)-n, codec.ErrCorrupt)
		}
		if err != nil {
			return nil, fmt.Errorf("restore operator state %q element %d: %w", name, i, asCorrupt(err))
		}
		l.items = append(l.items, v)
	}
	delete(b.restored, name)
	value, _ := encodedSchema[T]()
	b.schemas.register(checkpoint.StateSchema{Name: name, Scope: checkpoint.ScopeOperator, Value: value})
	b.lists[name] = l
	return l, nil
}

// Snapshot encodes every list, plus the restored lists never registered
// (carried over so that nothing restored is lost; see UnrestoredStates).
// The error is reserved for codecs that can fail; the built-in ones cannot.
func (b *OperatorBackend) Snapshot() (map[string][][]byte, error) {
	out := make(map[string][][]byte, len(b.lists)+len(b.restored))
	for name, raw := range b.restored {
		out[name] = raw
	}
	for name, l := range b.lists {
		out[name] = l.encode()
	}
	return out, nil
}

// DropUnrestored forgets the restored lists never registered.
func (b *OperatorBackend) DropUnrestored() {
	for name := range b.restored {
		delete(b.schemas.restored, checkpoint.ScopeOperator+"/"+name)
	}
	clear(b.restored)
}

// UnrestoredStates names, sorted, the restored lists never registered.
func (b *OperatorBackend) UnrestoredStates() []string {
	names := make([]string, 0, len(b.restored))
	for name := range b.restored {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Get returns the elements. The caller must not modify them; appending to
// the result is safe.
func (l *OperatorList[T]) Get() []T { return l.items[:len(l.items):len(l.items)] }

// Update replaces the elements with a copy of vs.
func (l *OperatorList[T]) Update(vs []T) { l.items = append([]T(nil), vs...) }

// Add appends v.
func (l *OperatorList[T]) Add(v T) { l.items = append(l.items, v) }

// Clear removes every element.
func (l *OperatorList[T]) Clear() { l.items = nil }

func (l *OperatorList[T]) encode() [][]byte {
	out := make([][]byte, len(l.items))
	for i, v := range l.items {
		out[i] = l.c.Append(nil, v)
	}
	return out
}

func (l *OperatorList[T]) types() string { return fmt.Sprintf("operator list state of %T", *new(T)) }
