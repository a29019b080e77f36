package codec

import (
	"fmt"
	"hash/fnv"
	"reflect"
	"strings"
)

// A Schema describes the bytes a Codec writes: which kinds of value, in
// which order, under which field identities. It is what a checkpoint keeps
// beside state so that a later version of a program can tell whether, and
// how, it can read that state (Resolve).
//
// A Schema is built by the same reflection walk that builds a type's plan
// (each plan carries the node that describes it), so the two cannot
// disagree; or it is decoded from a checkpoint with DecodeSchema. Recursive
// types are graphs: a node may refer back to an enclosing one. A Schema is
// immutable and safe for concurrent use.
type Schema struct{ root *node }

// kind is what a schema node encodes. The numbers are persisted (they are
// the node tags of the schema encoding): never renumber, only append.
type kind uint8

const (
	kindBool kind = iota + 1
	kindInt8
	kindInt16
	kindInt32
	kindInt64
	kindUint8
	kindUint16
	kindUint32
	kindUint64
	kindFloat32
	kindFloat64
	kindString
	kindBytes
	kindTime
	kindMarshaler // opaque: encoding.BinaryMarshaler bytes, identified by the Go type name
	kindStruct
	kindArray
	kindSlice
	kindMap
	kindPointer
	kindLimit // one past the last kind; also the tag of a back-reference (schema_encoding.go)
)

var kindNames = [...]string{
	kindBool: "bool", kindInt8: "int8", kindInt16: "int16", kindInt32: "int32", kindInt64: "int64",
	kindUint8: "uint8", kindUint16: "uint16", kindUint32: "uint32", kindUint64: "uint64",
	kindFloat32: "float32", kindFloat64: "float64", kindString: "string", kindBytes: "[]byte",
	kindTime: "time.Time", kindMarshaler: "marshaler", kindStruct: "struct", kindArray: "array",
	kindSlice: "slice", kindMap: "map", kindPointer: "pointer",
}

// composite reports whether nodes of k have children (and so may be part
// of a cycle and are numbered for back-references).
func (k kind) composite() bool { return k >= kindStruct && k < kindLimit }

// signedRank and unsignedRank give an integer kind's width rank (1 to 4),
// 0 if k is not such an integer.
func (k kind) signedRank() int {
	if k >= kindInt8 && k <= kindInt64 {
		return int(k-kindInt8) + 1
	}
	return 0
}

func (k kind) unsignedRank() int {
	if k >= kindUint8 && k <= kindUint64 {
		return int(k-kindUint8) + 1
	}
	return 0
}

// node is one type in a Schema.
type node struct {
	kind kind
	// name is the Go type name of a struct (informational: printed, not
	// compared, so renaming a struct type keeps its state) or of a
	// marshaler (its identity: another type's MarshalBinary bytes are not
	// these).
	name   string
	length int     // array length
	key    *node   // map key
	elem   *node   // array, slice and pointer element; map value
	fields []field // struct fields, in encoding order
}

// field is a struct field: its identity (the Go name, or the name in its
// weir tag) and the schema of its value.
type field struct {
	name string
	typ  *node
}

// leafNodes are shared by every schema: leaves carry nothing but a kind.
var leafNodes = func() [kindMarshaler]*node {
	var out [kindMarshaler]*node
	for k := kindBool; k < kindMarshaler; k++ {
		out[k] = &node{kind: k}
	}
	return out
}()

// SchemaFor returns the schema of T's encoding. It fails, wrapping
// ErrUnsupported, exactly when For[T] does.
func SchemaFor[T any]() (Schema, error) {
	t := reflect.TypeFor[T]()
	pl := newPlanner()
	p, err := pl.build(t)
	if err != nil {
		return Schema{}, fmt.Errorf("schema for %s: %w", t, err)
	}
	return Schema{root: pl.schema(p)}, nil
}

// Fingerprint is a 64-bit FNV-1a hash of the schema's encoding
// (AppendSchema). Equal schemas have equal fingerprints, so a restore whose
// stored fingerprint matches the program's can skip resolution; unequal
// fingerprints say nothing certain and Resolve decides.
func (s Schema) Fingerprint() uint64 {
	h := fnv.New64a()
	h.Write(AppendSchema(nil, s))
	return h.Sum64()
}

// Equal reports whether s and o encode to the same bytes: the same kinds,
// field identities, struct and marshaler names, in the same order.
func (s Schema) Equal(o Schema) bool {
	return string(AppendSchema(nil, s)) == string(AppendSchema(nil, o))
}

// IsZero reports whether s is the zero Schema, which describes nothing
// (what a failed SchemaFor or DecodeSchema returns).
func (s Schema) IsZero() bool { return s.root == nil }

// maxSchemaString bounds what String prints: a decoded schema may share one
// node many times over, and printing every path through a DAG is
// exponential in its depth.
const maxSchemaString = 4096

// String renders the schema in a Go-like notation, for messages and
// savepoint inspection: struct Total{User string; Count int64}. A struct
// that contains itself is printed by name where it recurs.
func (s Schema) String() string {
	if s.root == nil {
		return "<no schema>"
	}
	var b strings.Builder
	writeNode(&b, s.root, map[*node]bool{}, maxSchemaString)
	return b.String()
}

// describe is a short rendering of n for error messages.
func describe(n *node) string {
	var b strings.Builder
	writeNode(&b, n, map[*node]bool{}, 120)
	return b.String()
}

func writeNode(b *strings.Builder, n *node, open map[*node]bool, limit int) {
	if b.Len() > limit {
		if !strings.HasSuffix(b.String(), "…") {
			b.WriteString("…")
		}
		return
	}
	if open[n] {
		if n.name != "" {
			b.WriteString(n.name)
		} else {
			b.WriteString(kindNames[n.kind] + "…")
		}
		return
	}
	open[n] = true
	defer delete(open, n)
	switch n.kind {
	case kindMarshaler:
		b.WriteString("marshaler " + n.name)
	case kindStruct:
		b.WriteString("struct ")
		b.WriteString(n.name)
		b.WriteString("{")
		for i, f := range n.fields {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(f.name + " ")
			writeNode(b, f.typ, open, limit)
		}
		b.WriteString("}")
	case kindArray:
		fmt.Fprintf(b, "[%d]", n.length)
		writeNode(b, n.elem, open, limit)
	case kindSlice:
		b.WriteString("[]")
		writeNode(b, n.elem, open, limit)
	case kindMap:
		b.WriteString("map[")
		writeNode(b, n.key, open, limit)
		b.WriteString("]")
		writeNode(b, n.elem, open, limit)
	case kindPointer:
		b.WriteString("*")
		writeNode(b, n.elem, open, limit)
	default:
		b.WriteString(kindNames[n.kind])
	}
}
