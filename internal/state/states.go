package state

import "iter"

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
	// Get returns the current key's list, nil if empty. The caller must not
	// modify the returned elements: a snapshot may still be reading them.
	// Appending to the result is safe (it never writes into the state).
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

// MapState holds a map per key. An empty map and no map are the same.
type MapState[K comparable, V any] interface {
	// Get returns the value of user key k for the current key.
	Get(k K) (V, bool)
	// Put sets user key k to v for the current key.
	Put(k K, v V)
	// Remove deletes user key k for the current key.
	Remove(k K)
	// Contains reports whether user key k is set for the current key.
	Contains(k K) bool
	// All yields the current key's entries in unspecified order. Puts and
	// Removes during the iteration are allowed; as with a Go map, an entry
	// put during the iteration may or may not be yielded.
	All() iter.Seq2[K, V]
	// Len is the number of entries of the current key.
	Len() int
	// Clear removes all entries of the current key.
	Clear()
}

// ReducingState folds the values added for a key into one with a reduce
// function given at registration.
type ReducingState[V any] interface {
	// Get returns the current key's reduced value, or false if none.
	Get() (V, bool)
	// Add folds v into the current key's value: reduce(old, v), or v if
	// the key has none.
	Add(v V)
	// Clear removes the current key's value.
	Clear()
}
