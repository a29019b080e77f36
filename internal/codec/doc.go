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
// Anything else (channels, functions, interfaces, unexported fields) is
// rejected by For with an error wrapping ErrUnsupported that names the type
// and the fix.
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
