package codec

import (
	"errors"
	"fmt"
	"reflect"
)

// Codec encodes values of type T. Implementations are stateless and safe for
// concurrent use: a snapshot goroutine may encode while the task decodes.
type Codec[T any] interface {
	// Append appends v's encoding to dst and returns the extended slice.
	Append(dst []byte, v T) []byte
	// Decode decodes one value from the front of src and returns it with the
	// number of bytes consumed. Bad bytes give an error wrapping ErrCorrupt.
	Decode(src []byte) (v T, n int, err error)
}

// PointerCodec is implemented by codecs that encode from and decode into a
// value in place. Codec's Append and Decode pass T by value, and a codec
// that works through a pointer (the reflective plans For builds for
// structs, arrays, slices and maps) must then move each value to the heap:
// one allocation per value. Code that encodes or decodes many values, a
// channel's batch codec, uses these methods where a codec has them.
type PointerCodec[T any] interface {
	// AppendFrom appends *v's encoding to dst, as Append(dst, *v) does.
	AppendFrom(dst []byte, v *T) []byte
	// DecodeInto decodes one value from the front of src into *v, which
	// must hold T's zero value, and returns the bytes consumed. After an
	// error (wrapping ErrCorrupt) *v holds a partial value.
	DecodeInto(src []byte, v *T) (int, error)
}

// ErrCorrupt marks input that is not a valid encoding: truncated, out of
// range, or otherwise malformed. Callers test for it with errors.Is.
var ErrCorrupt = errors.New("corrupt encoding")

// ErrUnsupported marks a type For cannot build a codec for.
var ErrUnsupported = errors.New("unsupported type")

// maxDepth bounds the nesting of pointers, slices and maps a value may have.
// It turns a pointer cycle (on encode) or a maliciously deep input (on
// decode) into a clear failure instead of a fatal stack overflow.
const maxDepth = 10_000

// For returns the codec for T, chosen from T once. It fails, wrapping
// ErrUnsupported, for types that cannot be encoded; the message names the
// offending type and the fix.
func For[T any]() (Codec[T], error) {
	t := reflect.TypeFor[T]()
	if c, ok := direct[T](t); ok {
		return c, nil
	}
	p, err := newPlanner().build(t)
	if err != nil {
		return nil, fmt.Errorf("codec for %s: %w", t, err)
	}
	return &planCodec[T]{p: p}, nil
}

// corrupt builds an error wrapping ErrCorrupt.
func corrupt(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrCorrupt)
}

// unsupported builds the error For returns for a type it cannot encode.
func unsupported(t reflect.Type, why string) error {
	return fmt.Errorf("type %s %s: use bool, integers, floats, string, []byte, time.Time or structs, arrays, slices, maps and pointers of those, or implement encoding.BinaryMarshaler and encoding.BinaryUnmarshaler (pointer receiver): %w", t, why, ErrUnsupported)
}
