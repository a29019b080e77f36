package codec

import (
	"encoding/base64"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// Reading state without the program that wrote it (weir state export):
// one encoded value, described by the schema it was written under,
// transcoded into JSON. The bytes come from storage and are untrusted:
// every count and length is checked against the input, nesting is bounded
// and so is the output, since a schema whose values are all zero bytes
// long (struct{} and arrays of it, shared through back-references) could
// otherwise describe an exponentially large value in no input at all.

// maxJSONOutput bounds the JSON of one value. A variable so that tests
// can lower it.
var maxJSONOutput = 64 << 20

// AppendJSON appends the JSON of one value at the front of src, encoded
// under schema s, to dst, and returns the extended slice and the bytes of
// src the value took. The mapping:
//
//   - bool, integers, floats: JSON literals; NaN and ±Inf, which JSON has
//     no literal for, the strings "NaN", "+Inf" and "-Inf"
//   - string: a JSON string (invalid UTF-8 replaced by U+FFFD)
//   - []byte: base64 (standard, padded) string; nil is null
//   - time.Time: RFC 3339 string with nanoseconds where they are non-zero
//   - marshaler kinds: {"type":"pkg.Name","base64":"…"}, the bytes its
//     MarshalBinary wrote
//   - struct: an object keyed by field identity (the Go field name, or the
//     name of its weir tag), in encoding order
//   - array, slice: an array; a nil slice is null
//   - map: an array of [key, value] pairs (keys may be structs), in the
//     order the codec wrote them (by encoded key); a nil map is null
//   - pointer: the pointee, or null
//
// Bad bytes give an error wrapping ErrCorrupt, and dst is returned
// unchanged.
func AppendJSON(dst []byte, s Schema, src []byte) (out []byte, n int, err error) {
	if s.root == nil {
		return dst, 0, corrupt("json: no schema")
	}
	w := jsonWriter{out: dst, limit: len(dst) + maxJSONOutput, sizes: newSchemaWalker()}
	n, err = w.value(s.root, src, 0)
	if err != nil {
		return dst, 0, err
	}
	return w.out, n, nil
}

type jsonWriter struct {
	out   []byte
	limit int           // len(out) that fails the transcoding
	sizes *schemaWalker // least sizes of values, to check counts against the input
}

func (w *jsonWriter) value(n *node, src []byte, depth int) (int, error) {
	if len(w.out) > w.limit {
		return 0, corrupt("json: value exceeds %d bytes of JSON", maxJSONOutput)
	}
	switch n.kind {
	case kindBool:
		v, m, err := boolCodec{}.Decode(src)
		if err == nil {
			w.out = strconv.AppendBool(w.out, v)
		}
		return m, err
	case kindInt8:
		return jsonInt(w, src, intCodec[int8]{})
	case kindInt16:
		return jsonInt(w, src, intCodec[int16]{})
	case kindInt32:
		return jsonInt(w, src, intCodec[int32]{})
	case kindInt64:
		return jsonInt(w, src, intCodec[int64]{})
	case kindUint8:
		return jsonUint(w, src, uintCodec[uint8]{})
	case kindUint16:
		return jsonUint(w, src, uintCodec[uint16]{})
	case kindUint32:
		return jsonUint(w, src, uintCodec[uint32]{})
	case kindUint64:
		return jsonUint(w, src, uintCodec[uint64]{})
	case kindFloat32:
		v, m, err := float32Codec{}.Decode(src)
		if err == nil {
			w.out = appendJSONFloat(w.out, float64(v), 32)
		}
		return m, err
	case kindFloat64:
		v, m, err := float64Codec{}.Decode(src)
		if err == nil {
			w.out = appendJSONFloat(w.out, v, 64)
		}
		return m, err
	case kindString:
		b, m, err := lengthPrefixed(src, "string")
		if err == nil {
			w.out = AppendJSONString(w.out, string(b))
		}
		return m, err
	case kindBytes:
		l, m, err := uvarint(src)
		if err != nil {
			return 0, corrupt("[]byte length: %v", err)
		}
		if l == 0 {
			w.out = append(w.out, "null"...)
			return m, nil
		}
		if l-1 > uint64(len(src)-m) {
			return 0, corrupt("[]byte length %d exceeds the %d bytes left", l-1, len(src)-m)
		}
		end := m + int(l-1)
		w.out = appendBase64(w.out, src[m:end])
		return end, nil
	case kindTime:
		t, m, err := timeCodec{}.Decode(src)
		if err == nil {
			w.out = append(w.out, '"')
			w.out = t.AppendFormat(w.out, time.RFC3339Nano)
			w.out = append(w.out, '"')
		}
		return m, err
	case kindMarshaler:
		b, m, err := lengthPrefixed(src, "marshaled value")
		if err != nil {
			return 0, err
		}
		w.out = append(w.out, `{"type":`...)
		w.out = AppendJSONString(w.out, n.name)
		w.out = append(w.out, `,"base64":`...)
		w.out = appendBase64(w.out, b)
		w.out = append(w.out, '}')
		return m, nil
	}
	// Composites count towards the depth, structs and arrays too: a
	// decoded schema may nest them through up to maxSchemaNodes shared
	// nodes, which the stack should not have to hold.
	if depth >= maxDepth {
		return 0, corrupt("json: value nests deeper than %d levels", maxDepth)
	}
	depth++
	switch n.kind {
	case kindStruct:
		w.out = append(w.out, '{')
		read := 0
		for i, f := range n.fields {
			if i > 0 {
				w.out = append(w.out, ',')
			}
			w.out = AppendJSONString(w.out, f.name)
			w.out = append(w.out, ':')
			m, err := w.value(f.typ, src[read:], depth)
			if err != nil {
				return 0, err
			}
			read += m
		}
		w.out = append(w.out, '}')
		return read, nil
	case kindArray:
		return w.elems(n.elem, n.length, src, 0, depth)
	case kindSlice:
		count, isNil, read, err := readCount(src, w.sizes.minSize(n.elem), "slice")
		if err != nil {
			return 0, err
		}
		if isNil {
			w.out = append(w.out, "null"...)
			return read, nil
		}
		return w.elems(n.elem, count, src, read, depth)
	case kindMap:
		count, isNil, read, err := readCount(src, min(w.sizes.minSize(n.key)+w.sizes.minSize(n.elem), minSizeCap), "map")
		if err != nil {
			return 0, err
		}
		if isNil {
			w.out = append(w.out, "null"...)
			return read, nil
		}
		w.out = append(w.out, '[')
		for i := range count {
			if i > 0 {
				w.out = append(w.out, ',')
			}
			w.out = append(w.out, '[')
			m, err := w.value(n.key, src[read:], depth)
			if err != nil {
				return 0, err
			}
			read += m
			w.out = append(w.out, ',')
			if m, err = w.value(n.elem, src[read:], depth); err != nil {
				return 0, err
			}
			read += m
			w.out = append(w.out, ']')
		}
		w.out = append(w.out, ']')
		return read, nil
	case kindPointer:
		present, err := presence(src, "pointer")
		if err != nil {
			return 0, err
		}
		if !present {
			w.out = append(w.out, "null"...)
			return 1, nil
		}
		m, err := w.value(n.elem, src[1:], depth)
		if err != nil {
			return 0, err
		}
		return 1 + m, nil
	}
	return 0, corrupt("json: node kind %d", n.kind) // DecodeSchema admits no other kind
}

// elems writes count values of elem from src[read:] as a JSON array.
// Slice and map counts are checked against the input (readCount); an
// array's length is the schema's, and each of its elements consumes input
// or, if it takes none, output, which the limit bounds.
func (w *jsonWriter) elems(elem *node, count int, src []byte, read, depth int) (int, error) {
	w.out = append(w.out, '[')
	for i := range count {
		if i > 0 {
			w.out = append(w.out, ',')
		}
		m, err := w.value(elem, src[read:], depth)
		if err != nil {
			return 0, err
		}
		read += m
	}
	w.out = append(w.out, ']')
	return read, nil
}

func jsonInt[I signed](w *jsonWriter, src []byte, c intCodec[I]) (int, error) {
	v, m, err := c.Decode(src)
	if err == nil {
		w.out = strconv.AppendInt(w.out, int64(v), 10)
	}
	return m, err
}

func jsonUint[U unsigned](w *jsonWriter, src []byte, c uintCodec[U]) (int, error) {
	v, m, err := c.Decode(src)
	if err == nil {
		w.out = strconv.AppendUint(w.out, uint64(v), 10)
	}
	return m, err
}

// appendJSONFloat writes f as encoding/json does, and NaN and the
// infinities, which it refuses, as strings.
func appendJSONFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"+Inf"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Inf"`...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	dst = strconv.AppendFloat(dst, f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

func appendBase64(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, U+2028 and U+2029 too (as encoding/json
// does, for JavaScript), and each byte of invalid UTF-8 as U+FFFD.
func AppendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// SkipFunc returns a function that steps over one value encoded under s
// at the front of its input and returns its length, checking what it
// passes as a decoder would (errors wrap ErrCorrupt). It is how a reader
// without the program's types splits bytes that hold values back to back,
// such as the entries of a keyed state's snapshot. The function is safe
// for concurrent use.
func SkipFunc(s Schema) func([]byte) (int, error) {
	if s.root == nil {
		return func([]byte) (int, error) { return 0, corrupt("skip: no schema") }
	}
	skip := newSchemaWalker().skipper(s.root)
	return func(src []byte) (int, error) { return skip(src, 0) }
}
