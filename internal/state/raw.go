package state

import "time"

// A byte-oriented backend (the LSM backend) stores encoded keys and values
// and knows no Go types. It implements RawBackend: registration hands it a
// StateSpec, it returns one raw handle per state (RawValue, RawList or
// RawMap, acting on the current key), and the spec's Wrap turns that handle
// into the typed ValueState, ListState, MapState or ReducingState the
// function uses, with the codecs given at registration. The typed adapters
// live in rawtyped.go.

// RawBackend is a Backend that stores bytes. RegisterValue and friends call
// RegisterRaw for any backend other than the heap one.
type RawBackend interface {
	// RegisterRaw returns the typed state spec describes: on first
	// registration of spec.Name it makes the raw handle, calls spec.Wrap
	// with it and keeps the result; a later registration with the same
	// Kind and Desc returns that result, another one is an error wrapping
	// ErrStateMismatch. Restored bytes waiting for the state are converted
	// now, with the spec's length functions.
	RegisterRaw(spec StateSpec) (any, error)
}

// StateSpec describes a state to a RawBackend.
type StateSpec struct {
	Name string
	Kind Kind
	// Desc names the kind and Go types, for mismatch errors.
	Desc string
	// Wrap makes the typed state from the raw handle: a RawValue for
	// KindValue and KindReducing, a RawList for KindList, a RawMap for
	// KindMap.
	Wrap func(raw any) any
	// ValueLen returns the length of the encoded value (the list element
	// for KindList, the user value for KindMap) at the start of src, by
	// decoding it; restore uses it to split canonical payloads, whose
	// entries are not length-prefixed.
	ValueLen func(src []byte) (int, error)
	// UserKeyLen is ValueLen for the user keys of a KindMap state.
	UserKeyLen func(src []byte) (int, error)
	// Convert, when set, says the restored values (list elements, map
	// values; with the TTL timestamp, as ValueLen measures them) were
	// written under an older schema of the state's type: it decodes the
	// one at the start of src, appends its encoding in the program's
	// codec to dst and returns the bytes of src it consumed. A backend
	// rewrites every restored value of the state with it, once, before
	// the state is used (see schemas.go), so that its store never holds
	// two encodings. ValueLen measures the old encoding then.
	Convert func(dst, src []byte) (out []byte, n int, err error)
	// ConvertUserKey is Convert for the user keys of a KindMap state: a
	// converted user key may sort elsewhere.
	ConvertUserKey func(dst, src []byte) (out []byte, n int, err error)
	// TTL is the time to live of a state whose Kind has the KindTTL flag:
	// each value (list element, map value) is then stored as
	// zigzag-varint(last-access ms) then the value, and a full snapshot
	// taken at TTL clock time now leaves out those with now-ts >= TTL.
	TTL time.Duration
}

// RawValue is the raw handle of a value or reducing state. Every method
// acts on the backend's current key. Errors are kept by the backend (see
// Backend.Err): a failed Get reports no value.
type RawValue interface {
	// Get returns the current key's value. The bytes are valid until the
	// next call on the backend.
	Get() ([]byte, bool)
	// Put sets the current key's value; v is copied.
	Put(v []byte)
	// Delete removes the current key's value.
	Delete()
	// Fail records err (a value that does not decode) as the backend's
	// error.
	Fail(err error)
}

// RawList is the raw handle of a list state: the value is a sequence of
// frames (see AppendFrame), one per element, and Append adds frames
// without reading the list.
type RawList interface {
	// Get returns the current key's frames; valid until the next call.
	Get() ([]byte, bool)
	// Append adds frames after the current key's list; frames is copied.
	Append(frames []byte)
	// Put replaces the current key's list with frames.
	Put(frames []byte)
	// Delete removes the current key's list.
	Delete()
	Fail(err error)
}

// RawMap is the raw handle of a map state: one entry per user key, each
// read and written on its own.
type RawMap interface {
	// Get returns user key uk's value; valid until the next call.
	Get(uk []byte) ([]byte, bool)
	// Put sets user key uk to v; both are copied.
	Put(uk, v []byte)
	// Delete removes user key uk.
	Delete(uk []byte)
	// Iterate calls fn with each entry of the current key, in the order of
	// the encoded user keys, until fn returns false. It sees the entries as
	// of its start: writes made by fn are not yielded. The slices are valid
	// only during the call.
	Iterate(fn func(uk, v []byte) bool)
	// Clear removes every entry of the current key.
	Clear()
	Fail(err error)
}
