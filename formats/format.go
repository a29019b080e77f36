package formats

import (
	"fmt"
	"reflect"
)

// Format encodes values of type T to bytes and decodes them back. Its
// methods are safe for concurrent use.
type Format[T any] interface {
	// Decode reads one value from b. b is not retained.
	Decode(b []byte) (T, error)
	// Encode returns v's bytes.
	Encode(v T) ([]byte, error)
}

// typeName names T for errors.
func typeName[T any]() string {
	return reflect.TypeFor[T]().String()
}

// snippet is the start of a record for errors: at most 64 bytes, quoted.
func snippet(b []byte) string {
	const max = 64
	if len(b) > max {
		return fmt.Sprintf("%q… (%d bytes)", b[:max], len(b))
	}
	return fmt.Sprintf("%q", b)
}
