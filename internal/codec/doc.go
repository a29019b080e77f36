// Package codec turns values into bytes and back for checkpoints: keyed and
// operator state, timers and anything else that must survive a restart.
//
// A Codec is chosen once per type with For, never per value:
//
//	c, err := codec.For[Order]()      // builds an encoder plan for Order once
//	buf := c.Append(buf[:0], order)   // appends order's encoding
//	o, n, err := c.Decode(buf)        // decodes one Order, n bytes consumed
//
// Booleans, integers (varint, zigzag for signed), floats, strings, []byte and
// time.Time have dedicated codecs that neither reflect nor allocate per value.
// Structs (exported fields), arrays, slices, maps and pointers of those are
// encoded by a plan of closures built by reflection once; maps are written in
// the order of their encoded keys so that equal maps encode to equal bytes.
// Types whose pointer implements encoding.BinaryMarshaler and
// encoding.BinaryUnmarshaler are encoded by those methods (length-prefixed).
// Anything else (channels, functions, interfaces, unexported fields not
// tagged `weir:"-"`) is rejected by For with an error wrapping ErrUnsupported that names the type
// and the fix.
//
// A struct field is known by its identity: its Go name, or the name in a
// `weir:"name"` tag, which lets a field be renamed in Go and keep its state.
// A field tagged `weir:"-"` (exported or not) is not state: it is neither
// encoded nor decoded, and reads as its zero value. Two fields of one
// struct with the same identity are rejected by For.
//
// # Schemas
//
// SchemaFor[T] describes the bytes For[T]'s codec writes: per node a kind
// (bool, int8..int64, uint8..uint64, float32, float64, string, []byte,
// time.Time, an opaque marshaler with its Go type name, struct, array of a
// length, slice, map, pointer), for a struct its fields' identities and
// schemas in encoding order, for containers their elements' schemas. It is
// built by the same walk as the codec's plan, node by node, so the two
// cannot disagree. Integers are described by their encoded width (int is
// int64 on 64-bit platforms) and named types by their underlying kind; a
// struct carries its Go type name for printing only. A recursive type is a
// graph whose cycles pass through a pointer, slice or map.
//
// A checkpoint is to store each state's schema (AppendSchema) beside its
// bytes (the wiring is the next step, see docs/compatibility.md).
// On restore, Resolve[T](stored) compares it with T:
//
//	d, compat, err := codec.Resolve[Total](stored)
//	// compat: Identical, CompatibleAsIs, CompatibleAfterMigration, or
//	// Incompatible with err an *IncompatibleError listing each field.
//	v, n, err := d.Decode(oldBytes)
//
// Identical (equal schemas, equal Fingerprints) and CompatibleAsIs (only
// names or integer widths differ, the bytes do not) give T's own codec.
// CompatibleAfterMigration gives a decoder that converts while decoding:
// slower than T's codec where the types differ, as fast where they do not,
// and allocating no more than it per value; the engine then writes the
// state anew with T's codec and T's schema. Changes[T](stored) lists what
// differs (fields added, dropped, moved, widened...) for a savepoint check
// to show: a field renamed without a weir tag is dropped and added, and its
// state lost, which no error would reveal.
//
// # Evolution rules
//
// These changes are read, at any depth (inside structs, slices, arrays,
// map keys and values, pointers, and recursive types):
//
//   - a field added: it reads as its zero value;
//   - a field dropped: its bytes are skipped by the stored schema;
//   - fields reordered: matched by identity, not position;
//   - a field renamed, keeping its identity with a weir tag naming the old
//     name; a struct type renamed;
//   - an integer widened: int8 to int16, int32, int64 (or int); uint8 to
//     uint16, uint32, uint64 (or uint); float32 to float64;
//   - T to *T: the pointer is never nil; *T to T: nil reads as T's zero
//     value (so a nil and a pointer to the zero value both become it).
//
// Everything else is incompatible, and Resolve says where and why, by the
// reader's field path (Total.Stats[].Count, Index[key] for a map key):
// narrowing an integer or float, signed to unsigned or back, one kind for
// another (int64 to string, slice to map, a struct to a leaf), an array's
// length, a marshaler of another Go type, and, inside a map key, dropping
// a field or a pointer (two keys could become one). Such state needs a
// migration function, which this package does not provide.
//
// # Schema encoding, version 1
//
// An encoded schema is the byte SchemaFormatVersion (1), then the root
// node. A node is a tag byte, its kind (bool 1, int8..int64 2..5,
// uint8..uint64 6..9, float32 10, float64 11, string 12, []byte 13,
// time.Time 14, marshaler 15, struct 16, array 17, slice 18, map 19,
// pointer 20), followed by: for a marshaler its name; for a struct its
// name, a uvarint field count and per field its identity and node; for an
// array a uvarint length and the element; for a slice or pointer the
// element; for a map the key and the value. Names are a uvarint length and
// UTF-8 bytes. Composite nodes (16 to 20) are numbered from 0 in the order
// their tags appear; tag 21 followed by a uvarint number refers back to
// one, which is how a recursive type ends. SchemaFor's encodings are
// canonical: a type graph has one, and Fingerprint is FNV-1a (64 bits) of
// it. DecodeSchema treats its input as untrusted: it bounds depth and node
// count, and rejects a struct or array that contains itself without an
// indirection. testdata/schemas.golden pins the format.
//
// Decoders treat their input as untrusted: bad bytes give an error wrapping
// ErrCorrupt, never a panic, and a length read from the input is checked
// against the bytes that remain before anything is allocated for it. Decoded
// values never alias the input slice.
//
// Owns: the byte encoding of state, transaction handles and channel
// records. Must not touch: files, the runtime or state backends; a change
// of an encoding is a change of the checkpoint format and needs a version
// (checked by internal/archtest).
package codec
