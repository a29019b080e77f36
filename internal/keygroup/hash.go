package keygroup

import (
	"fmt"
	"math"
	"reflect"
	"unsafe"
)

// Hasher returns a stable 32-bit hash function for keys of type K, chosen
// once from K's underlying kind so that hashing a key neither boxes it nor
// reflects on it. Keys of other kinds need a Hashable implementation.
func Hasher[K comparable]() (func(K) uint32, error) {
	var zero K
	t := reflect.TypeFor[K]()
	if _, ok := any(zero).(Hashable); ok {
		return hashableHasher[K](t), nil
	}
	switch t.Kind() {
	case reflect.String:
		return func(k K) uint32 { return String(*(*string)(unsafe.Pointer(&k))) }, nil
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64, reflect.Uintptr:
		return func(k K) uint32 { return Uint64(*(*uint64)(unsafe.Pointer(&k))) }, nil
	case reflect.Int32, reflect.Uint32:
		return func(k K) uint32 { return Uint64(uint64(*(*uint32)(unsafe.Pointer(&k)))) }, nil
	case reflect.Int16, reflect.Uint16:
		return func(k K) uint32 { return Uint64(uint64(*(*uint16)(unsafe.Pointer(&k)))) }, nil
	case reflect.Int8, reflect.Uint8, reflect.Bool:
		return func(k K) uint32 { return Uint64(uint64(*(*uint8)(unsafe.Pointer(&k)))) }, nil
	case reflect.Float64:
		return func(k K) uint32 { return Uint64(math.Float64bits(*(*float64)(unsafe.Pointer(&k)))) }, nil
	case reflect.Float32:
		return func(k K) uint32 { return Uint64(uint64(math.Float32bits(*(*float32)(unsafe.Pointer(&k))))) }, nil
	}
	return nil, fmt.Errorf("key type %s has no stable hash: use a string or integer key, or give the type a method StableHash() uint32 (the same value in every process and run)", t)
}

// Uint64Kind reports whether Hasher[K] hashes a key as Uint64 of its 8
// bytes (an 8-byte integer kind without a StableHash method), so that a
// caller may compute that hash inline instead of calling Hasher's func.
func Uint64Kind[K comparable]() bool {
	var zero K
	if _, ok := any(zero).(Hashable); ok {
		return false
	}
	t := reflect.TypeFor[K]()
	if t.Size() != 8 {
		return false // int, uint and uintptr on 32-bit platforms
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

// hashableHasher calls K's StableHash. Converting each key to Hashable
// would copy it to the heap (one allocation per record at every keyed
// exchange of a struct key); the method expression K.StableHash, a plain
// func(K) uint32 found once by reflection, takes the key by value.
func hashableHasher[K comparable](t reflect.Type) func(K) uint32 {
	if m, ok := t.MethodByName("StableHash"); ok {
		if f, ok := m.Func.Interface().(func(K) uint32); ok {
			return f
		}
	}
	// A pointer receiver on a pointer key type, say: convert each key.
	return func(k K) uint32 { return any(k).(Hashable).StableHash() }
}

// Hashable is implemented by key types that supply their own stable hash
// (the same value in every process and every run).
type Hashable interface {
	StableHash() uint32
}

// Uint64 hashes an integer key (xor-folded; Mix spreads it later).
func Uint64(v uint64) uint32 {
	v ^= v >> 33
	v *= 0xff51afd7ed558ccd
	v ^= v >> 33
	return uint32(v) ^ uint32(v>>32)
}

// String hashes a string key with FNV-1a.
func String(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}
