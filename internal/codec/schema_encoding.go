package codec

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The persisted form of a Schema (a checkpoint stores it beside the state
// it describes; see doc.go for the layout). It is compact and canonical
// for schemas built by SchemaFor: one encoding per type graph, so the
// Fingerprint of equal types is equal across processes and versions.

// SchemaFormatVersion is the first byte of an encoded schema. It versions
// both this encoding and the value encodings the schema's kinds stand for:
// a change to either must bump it, and the golden test in
// testdata/schemas.golden fails until it does.
const SchemaFormatVersion = 1

// refTag is the node tag of a back-reference to an earlier composite node.
const refTag = byte(kindLimit)

// Limits on decoded schemas, which come from storage and are untrusted.
// They are far beyond any state type's needs (a schema from SchemaFor of a
// real type stays well inside them) and keep a hostile input from costing
// more than a small multiple of its length in memory and time.
const (
	maxSchemaDepth    = 1000          // nesting of nodes in the encoding
	maxSchemaNodes    = 1 << 16       // composite nodes
	maxSchemaArrayLen = math.MaxInt32 // elements of an array type
)

// AppendSchema appends s's encoding to dst. The zero Schema encodes to
// the version byte alone, which DecodeSchema rejects: there is nothing a
// restore could check against it.
func AppendSchema(dst []byte, s Schema) []byte {
	dst = append(dst, SchemaFormatVersion)
	if s.root == nil {
		return dst
	}
	return appendNode(dst, s.root, map[*node]int{})
}

func appendNode(dst []byte, n *node, index map[*node]int) []byte {
	if i, ok := index[n]; ok {
		dst = append(dst, refTag)
		return binary.AppendUvarint(dst, uint64(i))
	}
	dst = append(dst, byte(n.kind))
	if n.kind.composite() {
		index[n] = len(index) // numbered before its children: they may refer back
	}
	switch n.kind {
	case kindMarshaler:
		dst = appendName(dst, n.name)
	case kindStruct:
		dst = appendName(dst, n.name)
		dst = binary.AppendUvarint(dst, uint64(len(n.fields)))
		for _, f := range n.fields {
			dst = appendName(dst, f.name)
			dst = appendNode(dst, f.typ, index)
		}
	case kindArray:
		dst = binary.AppendUvarint(dst, uint64(n.length))
		dst = appendNode(dst, n.elem, index)
	case kindSlice, kindPointer:
		dst = appendNode(dst, n.elem, index)
	case kindMap:
		dst = appendNode(dst, n.key, index)
		dst = appendNode(dst, n.elem, index)
	}
	return dst
}

func appendName(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// DecodeSchema decodes a schema from the front of src and returns it with
// the number of bytes consumed. Bad bytes, and a version this package does
// not know, give an error wrapping ErrCorrupt.
func DecodeSchema(src []byte) (Schema, int, error) {
	if len(src) == 0 {
		return Schema{}, 0, corrupt("schema: no input")
	}
	if v := src[0]; v != SchemaFormatVersion {
		return Schema{}, 0, corrupt("schema format version %d: this weir reads version %d; restore with the weir version that wrote it or a newer one", v, SchemaFormatVersion)
	}
	d := schemaDecoder{src: src, pos: 1}
	root, err := d.node(0)
	if err != nil {
		return Schema{}, 0, fmt.Errorf("schema: %w", err)
	}
	if err := checkFinite(d.nodes); err != nil {
		return Schema{}, 0, fmt.Errorf("schema: %w", err)
	}
	return Schema{root: root}, d.pos, nil
}

type schemaDecoder struct {
	src   []byte
	pos   int
	nodes []*node // composite nodes in the order of their tags
}

func (d *schemaDecoder) node(depth int) (*node, error) {
	if depth > maxSchemaDepth {
		return nil, corrupt("nodes nest deeper than %d", maxSchemaDepth)
	}
	if d.pos >= len(d.src) {
		return nil, corrupt("truncated at byte %d: node expected", d.pos)
	}
	tag := d.src[d.pos]
	d.pos++
	if tag == refTag {
		i, err := d.uvarint("reference")
		if err != nil {
			return nil, err
		}
		if i >= uint64(len(d.nodes)) {
			return nil, corrupt("reference to node %d, only %d defined", i, len(d.nodes))
		}
		return d.nodes[i], nil
	}
	k := kind(tag)
	if k == 0 || k >= kindLimit {
		return nil, corrupt("unknown node tag %d at byte %d", tag, d.pos-1)
	}
	if !k.composite() && k != kindMarshaler {
		return leafNodes[k], nil
	}
	n := &node{kind: k}
	if k.composite() {
		if len(d.nodes) >= maxSchemaNodes {
			return nil, corrupt("more than %d composite nodes", maxSchemaNodes)
		}
		d.nodes = append(d.nodes, n)
	}
	var err error
	switch k {
	case kindMarshaler:
		if n.name, err = d.name("marshaler name"); err == nil && n.name == "" {
			err = corrupt("marshaler without a type name")
		}
	case kindStruct:
		err = d.structFields(n, depth)
	case kindArray:
		var l uint64
		if l, err = d.uvarint("array length"); err == nil {
			if l > maxSchemaArrayLen {
				return nil, corrupt("array length %d exceeds %d", l, maxSchemaArrayLen)
			}
			n.length = int(l)
			n.elem, err = d.node(depth + 1)
		}
	case kindSlice, kindPointer:
		n.elem, err = d.node(depth + 1)
	case kindMap:
		if n.key, err = d.node(depth + 1); err == nil {
			n.elem, err = d.node(depth + 1)
		}
	}
	if err != nil {
		return nil, err
	}
	return n, nil
}

func (d *schemaDecoder) structFields(n *node, depth int) error {
	var err error
	if n.name, err = d.name("struct name"); err != nil {
		return err
	}
	count, err := d.uvarint("field count")
	if err != nil {
		return err
	}
	// A field takes at least two bytes (a name length and a tag).
	if count > uint64(len(d.src)-d.pos)/2 {
		return corrupt("field count %d exceeds what the %d bytes left can hold", count, len(d.src)-d.pos)
	}
	n.fields = make([]field, 0, count)
	seen := make(map[string]bool, count)
	for range count {
		name, err := d.name("field name")
		if err != nil {
			return err
		}
		if name == "" || seen[name] {
			return corrupt("struct %s: field identity %q empty or repeated", n.name, name)
		}
		seen[name] = true
		typ, err := d.node(depth + 1)
		if err != nil {
			return err
		}
		n.fields = append(n.fields, field{name: name, typ: typ})
	}
	return nil
}

func (d *schemaDecoder) uvarint(what string) (uint64, error) {
	x, n, err := uvarint(d.src[d.pos:])
	if err != nil {
		return 0, corrupt("%s at byte %d: %v", what, d.pos, err)
	}
	d.pos += n
	return x, nil
}

func (d *schemaDecoder) name(what string) (string, error) {
	b, n, err := lengthPrefixed(d.src[d.pos:], what)
	if err != nil {
		return "", err
	}
	d.pos += n
	return string(b), nil
}

// checkFinite rejects a schema in which a struct or array contains itself
// other than through a pointer, slice or map: no Go type does, its values
// would be infinitely large, and walking one (minSize, skipping) would not
// end. It looks for a cycle among the edges from structs to their fields
// and from arrays to their elements; nodes are every composite node.
func checkFinite(nodes []*node) error {
	const (
		visiting = 1
		done     = 2
	)
	state := make(map[*node]int, len(nodes))
	var visit func(n *node) error
	visit = func(n *node) error {
		switch state[n] {
		case visiting:
			return corrupt("%s contains itself without a pointer, slice or map between", describe(n))
		case done:
			return nil
		}
		state[n] = visiting
		switch n.kind {
		case kindStruct:
			for _, f := range n.fields {
				if err := visit(f.typ); err != nil {
					return err
				}
			}
		case kindArray:
			if err := visit(n.elem); err != nil {
				return err
			}
		}
		state[n] = done
		return nil
	}
	for _, n := range nodes {
		if err := visit(n); err != nil {
			return err
		}
	}
	return nil
}
