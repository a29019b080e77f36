package weir

import (
	"iter"

	"github.com/weirstream/weir/internal/state"
)

// The keyed state handles a KeyedProcessFunction registers in Open
// (GetValueState, GetListState, GetMapState, GetReducingState). Each acts
// on the key of the record or timer being processed; their contents are
// checkpointed with the operator and redistributed by key group on a
// rescale. Handles are used from the function's own calls only, and in
// ProcessElement and OnTimer only: in Open no key is current, a read has
// no key to read and a write fails the job, naming the state.

// ValueState holds one value per key.
type ValueState[V any] interface {
	// Value returns the current key's value, or false if it has none.
	Value() (V, bool)
	// Update sets the current key's value.
	Update(v V)
	// Clear removes the current key's value.
	Clear()
}

// ListState holds a list of values per key.
type ListState[V any] interface {
	// Get returns the current key's list, nil if empty. Do not modify the
	// returned elements (a snapshot may still be reading them); appending
	// to the result is safe, it never writes into the state.
	Get() []V
	// Add appends v to the current key's list.
	Add(v V)
	// AddAll appends vs to the current key's list.
	AddAll(vs []V)
	// Update replaces the current key's list with a copy of vs.
	Update(vs []V)
	// Clear removes the current key's list.
	Clear()
}

// MapState holds a map from user keys K to values V per key. An empty
// map and no map are the same.
type MapState[K comparable, V any] interface {
	// Get returns the value of user key k for the current key.
	Get(k K) (V, bool)
	// Put sets user key k to v for the current key.
	Put(k K, v V)
	// Remove deletes user key k for the current key.
	Remove(k K)
	// Contains reports whether user key k is set for the current key.
	Contains(k K) bool
	// All yields the current key's entries in no particular order. Puts
	// and Removes during the iteration are allowed; as with a Go map, an
	// entry put during the iteration may or may not be yielded.
	All() iter.Seq2[K, V]
	// Len is the number of entries of the current key.
	Len() int
	// Clear removes all entries of the current key.
	Clear()
}

// ReducingState folds the values added for a key into one, with the
// reduce function given to GetReducingState.
type ReducingState[V any] interface {
	// Get returns the current key's reduced value, or false if none.
	Get() (V, bool)
	// Add folds v into the current key's value: reduce(old, v), or v if
	// the key has none.
	Add(v V)
	// Clear removes the current key's value.
	Clear()
}

// The internal handles implement the public interfaces as they are: no
// wrapper, so no extra call per state access.
var (
	_ ValueState[int]       = state.ValueState[int](nil)
	_ ListState[int]        = state.ListState[int](nil)
	_ MapState[string, int] = state.MapState[string, int](nil)
	_ ReducingState[int]    = state.ReducingState[int](nil)
)

// OperatorList is a checkpointed list of T held per subtask (operator
// state, not keyed); on a change of parallelism its elements are
// redistributed round-robin (or, for union list state, given to every
// subtask). Sources keep their read positions in one.
type OperatorList[T any] struct {
	l *state.OperatorList[T]
}

// Get returns the elements. Do not modify them; appending to the result
// is safe.
func (l *OperatorList[T]) Get() []T { return l.l.Get() }

// Update replaces the elements with a copy of vs.
func (l *OperatorList[T]) Update(vs []T) { l.l.Update(vs) }

// Add appends v.
func (l *OperatorList[T]) Add(v T) { l.l.Add(v) }

// Clear removes every element.
func (l *OperatorList[T]) Clear() { l.l.Clear() }
