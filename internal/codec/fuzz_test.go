package codec

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// fuzzDecode checks that decoding arbitrary bytes either fails with
// ErrCorrupt or yields a value whose encoding decodes to the same encoding
// (encodings are deterministic, so bytes compare values, NaNs included).
func fuzzDecode[T any](f *testing.F, seeds ...T) {
	c, err := For[T]()
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range seeds {
		f.Add(c.Append(nil, s))
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, in []byte) {
		v, n, err := c.Decode(in)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode %x: error %v does not wrap ErrCorrupt", in, err)
			}
			return
		}
		if n < 0 || n > len(in) {
			t.Fatalf("decode %x: consumed %d of %d bytes", in, n, len(in))
		}
		enc := c.Append(nil, v)
		v2, n2, err := c.Decode(enc)
		if err != nil || n2 != len(enc) {
			t.Fatalf("re-decode %x: n=%d err=%v", enc, n2, err)
		}
		if enc2 := c.Append(nil, v2); !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not stable: %x then %x", enc, enc2)
		}
	})
}

func FuzzDecodeInt64(f *testing.F) { fuzzDecode[int64](f, 0, -1, 1<<62) }

func FuzzDecodeString(f *testing.F) { fuzzDecode(f, "", "abc") }

func FuzzDecodeTime(f *testing.F) {
	fuzzDecode(f, time.Time{}, time.Date(2025, 3, 4, 5, 6, 7, 8, time.FixedZone("", -7200)))
}

func FuzzDecodeStruct(f *testing.F) {
	fuzzDecode(f, Order{}, Order{ID: 3, Name: "n", Amounts: []int32{1}, Meta: map[string]uint16{"a": 1}, Next: &Order{}})
}

func FuzzDecodeMap(f *testing.F) {
	fuzzDecode(f, map[string][]float64{}, map[string][]float64{"a": {1.5}, "b": nil})
}

func FuzzDecodePointerChain(f *testing.F) {
	fuzzDecode(f, &Node{V: 1, Next: &Node{V: 2}})
}

// FuzzDecodeSchema: DecodeSchema fails with ErrCorrupt or returns a schema
// that re-encodes to what it consumed; and whatever it returns, resolving
// it against a real type and decoding the remaining input through the
// result neither panics nor fails other than with ErrCorrupt.
func FuzzDecodeSchema(f *testing.F) {
	for _, s := range []Schema{
		mustSchema[Order](f), mustSchema[Node](f), mustSchema[map[string][]*float32](f),
		mustSchema[GoldenStats](f), mustSchema[Loop](f), mustSchema[[2]struct{ A, B int8 }](f),
	} {
		f.Add(AppendSchema(nil, s))
	}
	f.Add([]byte{SchemaFormatVersion, byte(kindStruct), 0, 1, 1, 'A', byte(kindPointer), refTag, 0, 1, 1, 0})
	f.Add([]byte{SchemaFormatVersion, byte(kindArray), 0xff, 0xff, 0x0f, byte(kindStruct), 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		s, n, err := DecodeSchema(in)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode %x: error %v does not wrap ErrCorrupt", in, err)
			}
			return
		}
		if enc := AppendSchema(nil, s); !bytes.Equal(enc, in[:n]) {
			// Not every valid input is canonical (a reference where the
			// node could be repeated), but it must decode to the same.
			s2, _, err := DecodeSchema(enc)
			if err != nil || !s2.Equal(s) {
				t.Fatalf("re-encoding %x gives %x, which decodes to %v, %v", in[:n], enc, s2, err)
			}
		}
		_ = s.String()
		_ = s.Fingerprint()
		resolveAndDecode[Order](t, s, in[n:])
		resolveAndDecode[Node](t, s, in[n:])
		resolveAndDecode[GoldenStats](t, s, in[n:])
		resolveAndDecode[float64](t, s, in[n:])
	})
}

func resolveAndDecode[T any](t *testing.T, s Schema, rest []byte) {
	d, _, err := Resolve[T](s)
	if err != nil {
		if !errors.Is(err, ErrIncompatible) {
			t.Fatalf("resolve %s as %T: %v, want ErrIncompatible", s, *new(T), err)
		}
		return
	}
	if _, _, err := d.Decode(rest); err != nil && !errors.Is(err, ErrCorrupt) {
		t.Fatalf("decode %x by %s as %T: %v, want ErrCorrupt", rest, s, *new(T), err)
	}
	if _, err := newSchemaWalker().skipper(s.root)(rest, 0); err != nil && !errors.Is(err, ErrCorrupt) {
		t.Fatalf("skip %x by %s: %v, want ErrCorrupt", rest, s, err)
	}
}

func mustSchema[T any](f *testing.F) Schema {
	s, err := SchemaFor[T]()
	if err != nil {
		f.Fatal(err)
	}
	return s
}
