package keygroup

import "reflect"

// HasherID names the hash path Hasher takes for K: "stable:" and the Go
// type for keys with a StableHash method, else the underlying kind, with
// kinds Hasher treats as one named once ("int64" for int and int64,
// "uint64" for uint, uint64 and uintptr). A
// checkpoint records it beside a state's key schema, so that a restore can
// tell whether a changed key type still hashes each key to the same key
// group.
func HasherID[K comparable]() string {
	t := reflect.TypeFor[K]()
	if t.Implements(reflect.TypeFor[Hashable]()) {
		return "stable:" + t.String()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int64:
		return "int64"
	case reflect.Uint, reflect.Uint64, reflect.Uintptr:
		return "uint64"
	case reflect.Int32:
		return "int32"
	case reflect.Uint32:
		return "uint32"
	case reflect.Int16:
		return "int16"
	case reflect.Uint16:
		return "uint16"
	case reflect.Int8:
		return "int8"
	case reflect.Uint8:
		return "uint8"
	case reflect.Bool:
		return "bool"
	case reflect.Float64:
		return "float64"
	case reflect.Float32:
		return "float32"
	}
	return "none:" + t.String()
}

// SameHash reports whether keys hashed along path old hash to the same
// value along path now, for every key both types can hold: equal paths,
// or two unsigned integer widths (Hasher zero-extends each to 64 bits).
// Signed widths differ: a negative int32 is zero-extended from 32 bits,
// a negative int64 is not.
func SameHash(old, now string) bool {
	if old == now {
		return true
	}
	return unsignedID(old) && unsignedID(now)
}

func unsignedID(id string) bool {
	switch id {
	case "uint8", "uint16", "uint32", "uint64":
		return true
	}
	return false
}
