package codec

import (
	"encoding"
	"encoding/binary"
	"math"
	"reflect"
	"time"
	"unsafe"
)

// The codecs in this file serve types whose encoding needs no plan. For
// picks them by T's underlying kind; a named type (type UserID int64) reuses
// its underlying type's codec through castCodec.

var (
	timeType        = reflect.TypeFor[time.Time]()
	marshalerType   = reflect.TypeFor[encoding.BinaryMarshaler]()
	unmarshalerType = reflect.TypeFor[encoding.BinaryUnmarshaler]()
)

// direct returns a plan-free codec for t (which is T), if there is one.
func direct[T any](t reflect.Type) (Codec[T], bool) {
	if t == timeType {
		return any(timeCodec{}).(Codec[T]), true
	}
	if isMarshaler(t) {
		return marshalerCodec[T]{}, true
	}
	switch t.Kind() {
	case reflect.Bool:
		return cast[T, bool](boolCodec{}), true
	case reflect.Int:
		return cast[T, int](intCodec[int]{}), true
	case reflect.Int8:
		return cast[T, int8](intCodec[int8]{}), true
	case reflect.Int16:
		return cast[T, int16](intCodec[int16]{}), true
	case reflect.Int32:
		return cast[T, int32](intCodec[int32]{}), true
	case reflect.Int64:
		return cast[T, int64](intCodec[int64]{}), true
	case reflect.Uint:
		return cast[T, uint](uintCodec[uint]{}), true
	case reflect.Uint8:
		return cast[T, uint8](uintCodec[uint8]{}), true
	case reflect.Uint16:
		return cast[T, uint16](uintCodec[uint16]{}), true
	case reflect.Uint32:
		return cast[T, uint32](uintCodec[uint32]{}), true
	case reflect.Uint64:
		return cast[T, uint64](uintCodec[uint64]{}), true
	case reflect.Float32:
		return cast[T, float32](float32Codec{}), true
	case reflect.Float64:
		return cast[T, float64](float64Codec{}), true
	case reflect.String:
		return cast[T, string](stringCodec{}), true
	case reflect.Slice:
		if e := t.Elem(); e.Kind() == reflect.Uint8 && !isMarshaler(e) {
			return cast[T, []byte](bytesCodec{}), true
		}
	}
	return nil, false
}

// isMarshaler reports whether *t implements both binary marshaling methods.
func isMarshaler(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return p.Implements(marshalerType) && p.Implements(unmarshalerType)
}

// cast adapts the codec of U to T, which has U's underlying type.
func cast[T, U any](c Codec[U]) Codec[T] {
	if same, ok := any(c).(Codec[T]); ok {
		return same
	}
	return castCodec[T, U]{c}
}

// castCodec reinterprets T as U; For guarantees identical memory layouts.
type castCodec[T, U any] struct{ c Codec[U] }

func (c castCodec[T, U]) Append(dst []byte, v T) []byte {
	return c.c.Append(dst, *(*U)(unsafe.Pointer(&v)))
}

func (c castCodec[T, U]) Decode(src []byte) (T, int, error) {
	u, n, err := c.c.Decode(src)
	return *(*T)(unsafe.Pointer(&u)), n, err
}

type boolCodec struct{}

func (boolCodec) Append(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

func (boolCodec) Decode(src []byte) (bool, int, error) {
	if len(src) == 0 {
		return false, 0, corrupt("bool: no input")
	}
	switch src[0] {
	case 0:
		return false, 1, nil
	case 1:
		return true, 1, nil
	}
	return false, 0, corrupt("bool: byte %#x is neither 0 nor 1", src[0])
}

type signed interface {
	int | int8 | int16 | int32 | int64
}

type unsigned interface {
	uint | uint8 | uint16 | uint32 | uint64
}

// intCodec writes signed integers as zigzag varints, so small magnitudes of
// either sign take few bytes.
type intCodec[I signed] struct{}

func (intCodec[I]) Append(dst []byte, v I) []byte { return binary.AppendVarint(dst, int64(v)) }

func (intCodec[I]) Decode(src []byte) (I, int, error) {
	x, n := binary.Varint(src)
	if n <= 0 {
		return 0, 0, varintErr(n)
	}
	if int64(I(x)) != x {
		return 0, 0, corrupt("integer %d out of range for %T", x, I(0))
	}
	return I(x), n, nil
}

type uintCodec[U unsigned] struct{}

func (uintCodec[U]) Append(dst []byte, v U) []byte { return binary.AppendUvarint(dst, uint64(v)) }

func (uintCodec[U]) Decode(src []byte) (U, int, error) {
	x, n := binary.Uvarint(src)
	if n <= 0 {
		return 0, 0, varintErr(n)
	}
	if uint64(U(x)) != x {
		return 0, 0, corrupt("integer %d out of range for %T", x, U(0))
	}
	return U(x), n, nil
}

func varintErr(n int) error {
	if n == 0 {
		return corrupt("varint: truncated input")
	}
	return corrupt("varint: overflows 64 bits")
}

// uvarint reads a length or count from src.
func uvarint(src []byte) (uint64, int, error) {
	x, n := binary.Uvarint(src)
	if n <= 0 {
		return 0, 0, varintErr(n)
	}
	return x, n, nil
}

type float32Codec struct{}

func (float32Codec) Append(dst []byte, v float32) []byte {
	return binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
}

func (float32Codec) Decode(src []byte) (float32, int, error) {
	if len(src) < 4 {
		return 0, 0, corrupt("float32: %d bytes left, need 4", len(src))
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(src)), 4, nil
}

type float64Codec struct{}

func (float64Codec) Append(dst []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
}

func (float64Codec) Decode(src []byte) (float64, int, error) {
	if len(src) < 8 {
		return 0, 0, corrupt("float64: %d bytes left, need 8", len(src))
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(src)), 8, nil
}

// lengthPrefixed returns the n bytes that follow a uvarint length at the
// front of src, and the total bytes consumed. The length is checked against
// the input before anything is allocated for it.
func lengthPrefixed(src []byte, what string) ([]byte, int, error) {
	l, n, err := uvarint(src)
	if err != nil {
		return nil, 0, corrupt("%s length: %v", what, err)
	}
	if l > uint64(len(src)-n) {
		return nil, 0, corrupt("%s length %d exceeds the %d bytes left", what, l, len(src)-n)
	}
	end := n + int(l)
	return src[n:end], end, nil
}

type stringCodec struct{}

func (stringCodec) Append(dst []byte, v string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(v)))
	return append(dst, v...)
}

func (stringCodec) Decode(src []byte) (string, int, error) {
	b, n, err := lengthPrefixed(src, "string")
	if err != nil {
		return "", 0, err
	}
	return string(b), n, nil
}

// bytesCodec keeps nil and empty slices apart: a length of 0 is nil, n+1 is
// a slice of n bytes.
type bytesCodec struct{}

func (bytesCodec) Append(dst []byte, v []byte) []byte {
	if v == nil {
		return append(dst, 0)
	}
	dst = binary.AppendUvarint(dst, uint64(len(v))+1)
	return append(dst, v...)
}

func (bytesCodec) Decode(src []byte) ([]byte, int, error) {
	l, n, err := uvarint(src)
	if err != nil {
		return nil, 0, corrupt("[]byte length: %v", err)
	}
	if l == 0 {
		return nil, n, nil
	}
	if l-1 > uint64(len(src)-n) {
		return nil, 0, corrupt("[]byte length %d exceeds the %d bytes left", l-1, len(src)-n)
	}
	end := n + int(l-1)
	return append([]byte{}, src[n:end]...), end, nil
}

// timeCodec uses time.Time's own binary form (wall clock and zone offset;
// the monotonic reading is dropped, as it means nothing in another process).
type timeCodec struct{}

func (timeCodec) Append(dst []byte, v time.Time) []byte {
	// The binary form is 15 or 16 bytes, so its length prefix is one byte,
	// written first and patched: no temporary buffer.
	dst = append(dst, 0)
	start := len(dst)
	out, err := v.AppendBinary(dst)
	if err != nil {
		// Only a zone offset that is not a whole minute fails; such times
		// come from nothing but hand-built locations. Keep the instant.
		out, _ = v.UTC().AppendBinary(dst[:start])
	}
	out[start-1] = byte(len(out) - start)
	return out
}

func (timeCodec) Decode(src []byte) (time.Time, int, error) {
	b, n, err := lengthPrefixed(src, "time.Time")
	if err != nil {
		return time.Time{}, 0, err
	}
	var t time.Time
	if err := t.UnmarshalBinary(b); err != nil {
		return time.Time{}, 0, corrupt("time.Time: %v", err)
	}
	return t, n, nil
}

// marshalerCodec length-prefixes what the type's MarshalBinary returns.
type marshalerCodec[T any] struct{}

func (marshalerCodec[T]) Append(dst []byte, v T) []byte {
	return appendMarshaled(dst, any(&v).(encoding.BinaryMarshaler))
}

func (marshalerCodec[T]) Decode(src []byte) (v T, n int, err error) {
	n, err = decodeMarshaled(src, any(&v).(encoding.BinaryUnmarshaler))
	if err != nil {
		var zero T
		return zero, 0, err
	}
	return v, n, nil
}

func appendMarshaled(dst []byte, m encoding.BinaryMarshaler) []byte {
	b, err := m.MarshalBinary()
	if err != nil {
		// Append has no error result; a value that cannot marshal cannot be
		// checkpointed, and losing it silently would be worse.
		panic(unsupportedValue{typ: reflect.TypeOf(m).Elem(), err: err})
	}
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

func decodeMarshaled(src []byte, u encoding.BinaryUnmarshaler) (n int, err error) {
	b, n, err := lengthPrefixed(src, "marshaled value")
	if err != nil {
		return 0, err
	}
	defer func() {
		// A user UnmarshalBinary that panics on bad bytes must not take the
		// task down with a panic the restore path cannot report.
		if r := recover(); r != nil {
			n, err = 0, corrupt("%T.UnmarshalBinary panicked: %v", u, r)
		}
	}()
	if err := u.UnmarshalBinary(b); err != nil {
		return 0, corrupt("%T.UnmarshalBinary: %v", u, err)
	}
	return n, nil
}

// unsupportedValue is the panic value for a value that cannot be encoded.
type unsupportedValue struct {
	typ reflect.Type
	err error
}

func (u unsupportedValue) Error() string {
	return "codec: encode " + u.typ.String() + ": MarshalBinary failed: " + u.err.Error()
}

func (u unsupportedValue) Unwrap() error { return u.err }
