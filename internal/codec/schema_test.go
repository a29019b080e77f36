package codec

import (
	"bytes"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"
)

type Tagged struct {
	Renamed int64          `weir:"Old"` // was the field Old: keeps its identity
	Cache   map[string]int `weir:"-"`
	scratch []byte         `weir:"-"` // unexported, but not state
	Plain   string
}

type Tree struct {
	Label    string
	Children []Tree
	Parent   *Tree
	Index    map[string]*Tree
}

type Loop []Loop

func schemaOf[T any](t *testing.T) Schema {
	t.Helper()
	s, err := SchemaFor[T]()
	if err != nil {
		t.Fatalf("SchemaFor[%T]: %v", *new(T), err)
	}
	return s
}

func TestSchemaString(t *testing.T) {
	cases := []struct {
		s    Schema
		want string
	}{
		{schemaOf[int](t), "int64"},
		{schemaOf[UserID](t), "int64"}, // a named type is its underlying kind's bytes
		{schemaOf[uint](t), "uint64"},
		{schemaOf[[]byte](t), "[]byte"},
		{schemaOf[time.Time](t), "time.Time"},
		{schemaOf[netip.Addr](t), "marshaler net/netip.Addr"},
		{schemaOf[map[string][]*float32](t), "map[string][]*float32"},
		{schemaOf[[3]int8](t), "[3]int8"},
		{schemaOf[Inner](t), "struct codec.Inner{Tags []string; Score float32}"},
		{schemaOf[struct{ A bool }](t), "struct {A bool}"},
		{schemaOf[Tagged](t), "struct codec.Tagged{Old int64; Plain string}"},
		{schemaOf[Node](t), "struct codec.Node{V int64; Next *codec.Node}"},
		{schemaOf[Tree](t), "struct codec.Tree{Label string; Children []codec.Tree; Parent *codec.Tree; Index map[string]*codec.Tree}"},
		{schemaOf[Loop](t), "[]slice…"},
		{Schema{}, "<no schema>"},
	}
	for _, tc := range cases {
		if got := tc.s.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

// schemaCorpus is a schema of every kind, shape and recursion the planner
// produces.
func schemaCorpus(t *testing.T) map[string]Schema {
	return map[string]Schema{
		"bool": schemaOf[bool](t), "int8": schemaOf[int8](t), "uint16": schemaOf[uint16](t),
		"float64": schemaOf[float64](t), "string": schemaOf[string](t), "bytes": schemaOf[[]byte](t),
		"time": schemaOf[time.Time](t), "addr": schemaOf[netip.Addr](t),
		"Order": schemaOf[Order](t), "*Order": schemaOf[*Order](t), "Node": schemaOf[Node](t),
		"Tree": schemaOf[Tree](t), "Loop": schemaOf[Loop](t), "Tagged": schemaOf[Tagged](t),
		"flatAll": schemaOf[flatAll](t), "empty": schemaOf[struct{}](t),
		"[0]struct{}": schemaOf[[0]struct{}](t), "map": schemaOf[map[[2]int16][]map[string]bool](t),
	}
}

func TestSchemaEncodingRoundTrip(t *testing.T) {
	for name, s := range schemaCorpus(t) {
		enc := AppendSchema([]byte("prefix"), s)[len("prefix"):]
		got, n, err := DecodeSchema(append(enc, "trailer"...))
		if err != nil {
			t.Fatalf("%s: decode %x: %v", name, enc, err)
		}
		if n != len(enc) {
			t.Fatalf("%s: consumed %d of %d bytes", name, n, len(enc))
		}
		if !got.Equal(s) || got.Fingerprint() != s.Fingerprint() || got.String() != s.String() {
			t.Fatalf("%s: decoded %s (%x), want %s (%x)", name, got, got.Fingerprint(), s, s.Fingerprint())
		}
		for i := range len(enc) {
			if _, _, err := DecodeSchema(enc[:i]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s: %d-byte prefix: err %v, want ErrCorrupt", name, i, err)
			}
		}
	}
}

// TestSchemaIsCanonical: building a type's schema twice, alone or inside
// another type, gives the same encoding; different types give different
// fingerprints.
func TestSchemaIsCanonical(t *testing.T) {
	a, b := schemaOf[Tree](t), schemaOf[Tree](t)
	if !bytes.Equal(AppendSchema(nil, a), AppendSchema(nil, b)) {
		t.Fatal("two builds of Tree's schema encode differently")
	}
	seen := map[uint64]string{}
	for name, s := range schemaCorpus(t) {
		if other, dup := seen[s.Fingerprint()]; dup {
			t.Fatalf("%s and %s share fingerprint %x", name, other, s.Fingerprint())
		}
		seen[s.Fingerprint()] = name
	}
	if !schemaOf[int64](t).Equal(schemaOf[UserID](t)) {
		t.Fatal("int64 and UserID (type UserID int64) encode the same bytes but have different schemas")
	}
}

func TestRecursiveSchemaIsAGraph(t *testing.T) {
	s := schemaOf[Node](t)
	next := s.root.fields[1].typ
	if next.kind != kindPointer || next.elem != s.root {
		t.Fatalf("Node.Next's schema %s does not point back at Node's", describe(next))
	}
	// struct, name, 2 fields, "V" int64, "Next" pointer ref(0)
	want := []byte{SchemaFormatVersion, byte(kindStruct), 10}
	want = append(want, "codec.Node"...)
	want = append(want, 2, 1, 'V', byte(kindInt64), 4, 'N', 'e', 'x', 't', byte(kindPointer), refTag, 0)
	if got := AppendSchema(nil, s); !bytes.Equal(got, want) {
		t.Fatalf("Node's schema encodes to %x, want %x", got, want)
	}
}

// TestSchemaDescribesBytes: skipping by a type's schema (as it is built,
// and as it comes back from its encoding) steps over exactly the bytes the
// type's codec writes: the schema and the plan agree on every kind.
func TestSchemaDescribesBytes(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 6, time.FixedZone("", 3600))
	o := Order{
		ID: -7, Name: "a", Paid: true, Amounts: []int32{1, -2}, Meta: map[string]uint16{"x": 1},
		Inner: Inner{Tags: []Label{"t"}, Score: 0.5}, Next: &Order{ID: 8}, At: at,
		Addr: netip.MustParseAddr("::1"), Raw: []byte("raw"), Fixed: [3]int8{-1, 0, 1},
		Nested: map[int][]string{1: {"a"}, 2: nil}, Embedded: Embedded{E: 9},
	}
	tree := Tree{Label: "root", Children: []Tree{{Label: "c"}}, Index: map[string]*Tree{"x": {Label: "x"}, "nil": nil}}
	tree.Parent = &Tree{Label: "p"}
	checkSkip(t, o)
	checkSkip(t, &o)
	checkSkip(t, Order{})
	checkSkip(t, tree)
	checkSkip(t, Loop{nil, {}, {{}}})
	checkSkip(t, flatAll{I: -1, U64: 1 << 63, F32: 1, F64: 2, Z: true})
	checkSkip(t, Tagged{Renamed: 5, Plain: "p", Cache: map[string]int{"dropped": 1}})
	checkSkip(t, []struct{}{{}, {}})
	checkSkip(t, [2][0]int{})
	checkSkip(t, map[[2]int16][]map[string]bool{{1, 2}: {{"t": true}, nil}})
	checkSkip(t, int8(-100))
	checkSkip(t, uint(1<<60))
	checkSkip(t, []byte(nil))
	checkSkip(t, at)
	checkSkip(t, "str")
}

func checkSkip[T any](t *testing.T, v T) {
	t.Helper()
	c, err := For[T]()
	if err != nil {
		t.Fatal(err)
	}
	enc := c.Append(nil, v)
	built := schemaOf[T](t)
	decoded, _, err := DecodeSchema(AppendSchema(nil, built))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []Schema{built, decoded} {
		skip := newSchemaWalker().skipper(s.root)
		n, err := skip(append(enc, 0xff), 0)
		if err != nil || n != len(enc) {
			t.Fatalf("%T: skipping by %s: %d bytes, %v; the encoding has %d", v, s, n, err, len(enc))
		}
		for i := range len(enc) {
			if _, err := skip(enc[:i], 0); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%T: skipping a %d-byte prefix: err %v, want ErrCorrupt", v, i, err)
			}
		}
	}
}

type dupIdentity struct {
	A int
	B int `weir:"A"`
}

type badTag struct {
	A int `weir:"a,omitempty"`
}

type unexportedTagged struct {
	A int
	b int `weir:"b"` // a name does not make an unexported field encodable
}

func TestFieldIdentityErrors(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errOf[dupIdentity](), `fields A and B with the same identity "A"`},
		{errOf[badTag](), `weir tag "a,omitempty"`},
		{errOf[unexportedTagged](), "unexported field b"},
	} {
		if !errors.Is(tc.err, ErrUnsupported) || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("err = %v, want ErrUnsupported naming %q", tc.err, tc.want)
		}
	}
	_ = unexportedTagged{b: 1}
	_ = Tagged{scratch: nil}
}

func errOf[T any]() error {
	_, err := SchemaFor[T]()
	return err
}

// TestSkippedFieldIsNotEncoded: a `weir:"-"` field is neither written nor
// read; it decodes as its zero value.
func TestSkippedFieldIsNotEncoded(t *testing.T) {
	c, err := For[Tagged]()
	if err != nil {
		t.Fatal(err)
	}
	in := Tagged{Renamed: 3, Cache: map[string]int{"a": 1}, scratch: []byte("x"), Plain: "p"}
	got, _, err := c.Decode(c.Append(nil, in))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Tagged{Renamed: 3, Plain: "p"}); got.Renamed != want.Renamed || got.Plain != want.Plain || got.Cache != nil || got.scratch != nil {
		t.Fatalf("decoded %+v, want %+v", got, want)
	}
}

func TestDecodeSchemaCorrupt(t *testing.T) {
	v := byte(SchemaFormatVersion)
	deep := []byte{v}
	for range maxSchemaDepth + 2 {
		deep = append(deep, byte(kindSlice))
	}
	deep = append(deep, byte(kindBool))
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "no input"},
		{"newer version", []byte{v + 1, byte(kindBool)}, "format version 2"},
		{"no root", []byte{v}, "node expected"},
		{"tag 0", []byte{v, 0}, "unknown node tag 0"},
		{"unknown tag", []byte{v, refTag + 1}, "unknown node tag"},
		{"ref before any node", []byte{v, refTag, 0}, "reference to node 0, only 0 defined"},
		{"ref out of range", []byte{v, byte(kindSlice), refTag, 1}, "reference to node 1"},
		{"struct contains itself", []byte{v, byte(kindStruct), 0, 1, 1, 'A', refTag, 0}, "contains itself"},
		{"array contains itself", []byte{v, byte(kindArray), 2, refTag, 0}, "contains itself"},
		{"field count huge", []byte{v, byte(kindStruct), 0, 0xff, 0xff, 0x03}, "field count"},
		{"duplicate field", []byte{v, byte(kindStruct), 0, 2, 1, 'A', byte(kindBool), 1, 'A', byte(kindBool)}, `identity "A"`},
		{"empty field name", []byte{v, byte(kindStruct), 0, 1, 0, byte(kindBool)}, `identity ""`},
		{"name too long", []byte{v, byte(kindStruct), 9, 'a'}, "struct name length 9"},
		{"marshaler unnamed", []byte{v, byte(kindMarshaler), 0}, "marshaler without a type name"},
		{"array too long", []byte{v, byte(kindArray), 0xff, 0xff, 0xff, 0xff, 0x0f, byte(kindBool)}, "array length"},
		{"too deep", deep, "nest deeper"},
	}
	for _, tc := range cases {
		_, _, err := DecodeSchema(tc.in)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: DecodeSchema(%x) = %v, want ErrCorrupt naming %q", tc.name, tc.in, err, tc.want)
		}
	}
}

// TestSelfReferenceThroughPointerDecodes: the cycle checkFinite allows.
func TestSelfReferenceThroughPointerDecodes(t *testing.T) {
	in := []byte{SchemaFormatVersion, byte(kindStruct), 0, 1, 1, 'A', byte(kindPointer), refTag, 0}
	s, _, err := DecodeSchema(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != "struct {A *struct…}" {
		t.Fatalf("String() = %q", got)
	}
}
