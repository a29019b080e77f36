package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

type jsonInner struct {
	A int8
	B []string
}

type jsonOuter struct {
	Name    string
	Renamed uint16 `weir:"r"`
	F32     float32
	F64     float64
	Raw     []byte
	When    time.Time
	Ptr     *jsonInner
	Nil     *jsonInner
	Arr     [2]bool
	Items   []jsonInner
	NilList []int64
	ByKey   map[string]int32
	ByInner map[jsonInner2]string
	Addr    netip.Addr
	Empty   struct{}
}

type jsonInner2 struct{ X, Y int64 }

// jsonCase encodes v with For[T] and checks that AppendJSON of its bytes
// under SchemaFor[T] is the JSON of want (through encoding/json) and
// consumes exactly the encoding, which is followed by a trailing byte.
func jsonCase[T any](t *testing.T, v T, want any) {
	t.Helper()
	c, err := For[T]()
	if err != nil {
		t.Fatal(err)
	}
	s, err := SchemaFor[T]()
	if err != nil {
		t.Fatal(err)
	}
	enc := c.Append(nil, v)
	got, n, err := AppendJSON([]byte("prefix:"), s, append(enc, 0x7f))
	if err != nil {
		t.Fatalf("AppendJSON(%s, %x): %v", s, enc, err)
	}
	if n != len(enc) {
		t.Fatalf("AppendJSON consumed %d bytes, the encoding has %d", n, len(enc))
	}
	if m, err := SkipFunc(s)(enc); err != nil || m != n {
		t.Fatalf("SkipFunc: %d, %v; AppendJSON consumed %d", m, err, n)
	}
	got, ok := bytes.CutPrefix(got, []byte("prefix:"))
	if !ok {
		t.Fatalf("dst not kept: %s", got)
	}
	wantJSON, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(t, got, wantJSON) {
		t.Errorf("AppendJSON of %T:\n got %s\nwant %s", v, got, wantJSON)
	}
}

// sameJSON compares two JSON documents as values, numbers exactly.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	parse := func(p []byte) any {
		d := json.NewDecoder(bytes.NewReader(p))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("not JSON: %v: %s", err, p)
		}
		if d.More() {
			t.Fatalf("more than one JSON value: %s", p)
		}
		return v
	}
	return reflect.DeepEqual(parse(a), parse(b))
}

func TestAppendJSON(t *testing.T) {
	when := time.Date(2025, 3, 4, 5, 6, 7, 8, time.FixedZone("", 3600))
	t.Run("leaves", func(t *testing.T) {
		jsonCase(t, true, true)
		jsonCase(t, int8(-128), -128)
		jsonCase(t, int16(300), 300)
		jsonCase(t, int32(-70000), -70000)
		jsonCase(t, int64(math.MinInt64), int64(math.MinInt64))
		jsonCase(t, uint8(255), 255)
		jsonCase(t, uint64(math.MaxUint64), uint64(math.MaxUint64))
		jsonCase(t, 1.5, 1.5)
		jsonCase(t, 1e-9, 1e-9)
		jsonCase(t, 3e21, 3e21)
		jsonCase(t, float32(0.1), float32(0.1))
		jsonCase(t, "héllo \"quoted\"\n\t\x01 <&> \u2028", "héllo \"quoted\"\n\t\x01 <&> \u2028")
		jsonCase(t, "bad \xff utf-8", "bad \ufffd utf-8")
		jsonCase(t, []byte("bytes"), []byte("bytes"))
		jsonCase(t, []byte{}, "")
		jsonCase(t, []byte(nil), nil)
		jsonCase(t, when, when)
		jsonCase(t, time.Time{}, time.Time{})
	})
	t.Run("non-finite", func(t *testing.T) {
		jsonCase(t, math.NaN(), "NaN")
		jsonCase(t, math.Inf(1), "+Inf")
		jsonCase(t, float32(math.Inf(-1)), "-Inf")
	})
	t.Run("marshaler", func(t *testing.T) {
		a := netip.MustParseAddr("10.0.0.1")
		b, _ := a.MarshalBinary()
		jsonCase(t, a, map[string]any{"type": "net/netip.Addr", "base64": b})
	})
	t.Run("containers", func(t *testing.T) {
		jsonCase(t, []int64{1, -2, 3}, []int64{1, -2, 3})
		jsonCase(t, []int64{}, []int64{})
		jsonCase(t, []int64(nil), nil)
		jsonCase(t, [3]string{"a", "b", "c"}, [3]string{"a", "b", "c"})
		jsonCase(t, map[string]int64{"b": 2, "a": 1}, [][]any{{"a", 1}, {"b", 2}})
		jsonCase(t, map[string]int64(nil), nil)
		jsonCase(t, map[jsonInner2][]float64{{1, 2}: {0.5}, {0, 1}: nil},
			[][]any{{jsonInner2{0, 1}, nil}, {jsonInner2{1, 2}, []float64{0.5}}})
		x := 7
		jsonCase(t, &x, 7)
		jsonCase(t, (*int)(nil), nil)
		jsonCase(t, [][]string{{"a"}, nil, {}}, [][]string{{"a"}, nil, {}})
	})
	t.Run("struct", func(t *testing.T) {
		v := jsonOuter{
			Name: "alice", Renamed: 9, F32: 2.5, F64: -1.25, Raw: []byte{1, 2, 3}, When: when,
			Ptr:   &jsonInner{A: -1, B: []string{"x"}},
			Arr:   [2]bool{true, false},
			Items: []jsonInner{{A: 1}, {A: 2, B: []string{}}},
			ByKey: map[string]int32{"k": 1}, ByInner: map[jsonInner2]string{{3, 4}: "v"},
			Addr: netip.MustParseAddr("::1"),
		}
		addr, _ := v.Addr.MarshalBinary()
		want := map[string]any{
			"Name": "alice", "r": 9, "F32": 2.5, "F64": -1.25, "Raw": []byte{1, 2, 3}, "When": when,
			"Ptr": v.Ptr, "Nil": nil, "Arr": v.Arr, "Items": v.Items, "NilList": nil,
			"ByKey": [][]any{{"k", 1}}, "ByInner": [][]any{{jsonInner2{3, 4}, "v"}},
			"Addr":  map[string]any{"type": "net/netip.Addr", "base64": addr},
			"Empty": map[string]any{},
		}
		jsonCase(t, v, want)
	})
}

func TestAppendJSONRejects(t *testing.T) {
	s := func(v Schema, err error) Schema {
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		name   string
		schema Schema
		in     []byte
		says   string
	}{
		{"no schema", Schema{}, []byte{0}, "no schema"},
		{"truncated string", s(SchemaFor[string]()), []byte{5, 'a'}, "exceeds"},
		{"bad bool", s(SchemaFor[bool]()), []byte{2}, "neither 0 nor 1"},
		{"int8 range", s(SchemaFor[int8]()), []byte{0x80, 0x02}, "out of range"},
		{"slice count", s(SchemaFor[[]int64]()), []byte{0xff, 0x7f, 1}, "exceeds"},
		{"pointer presence", s(SchemaFor[*int64]()), []byte{2}, "presence"},
		{"short float", s(SchemaFor[float64]()), []byte{1, 2}, "need 8"},
		{"bad time", s(SchemaFor[time.Time]()), []byte{1, 0}, "time.Time"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, n, err := AppendJSON([]byte("x"), c.schema, c.in)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("err = %v, want ErrCorrupt saying %q", err, c.says)
			}
			if string(out) != "x" || n != 0 {
				t.Fatalf("out %q n %d after an error", out, n)
			}
		})
	}
}

// TestAppendJSONBounded: a schema whose values take no bytes at all,
// shared through back-references, describes a value whose JSON is
// exponentially large; the output limit stops it.
func TestAppendJSONBounded(t *testing.T) {
	defer func(n int) { maxJSONOutput = n }(maxJSONOutput)
	maxJSONOutput = 1 << 16
	// [1<<20][1<<20]struct{}
	in := []byte{SchemaFormatVersion, byte(kindArray), 0x80, 0x80, 0x40, byte(kindArray), 0x80, 0x80, 0x40, byte(kindStruct), 0, 0}
	s, _, err := DecodeSchema(in)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := AppendJSON(nil, s, nil); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "exceeds") {
		t.Fatalf("err = %v", err)
	}
	// S0 = struct{}, S(k) = struct{a, b S(k-1)} through back-references:
	// 2^60 empty structs, which skipping passes at once (they take no
	// bytes) and AppendJSON refuses.
	var nested func(depth, k int) []byte
	nested = func(depth, k int) []byte {
		if k == 0 {
			return []byte{byte(kindStruct), 0, 0}
		}
		b := append([]byte{byte(kindStruct), 0, 2, 1, 'a'}, nested(depth+1, k-1)...)
		return append(b, 1, 'b', refTag, byte(depth+1))
	}
	if s, _, err = DecodeSchema(append([]byte{SchemaFormatVersion}, nested(0, 60)...)); err != nil {
		t.Fatal(err)
	}
	if n, err := SkipFunc(s)([]byte{1}); n != 0 || err != nil {
		t.Fatalf("skip: %d, %v", n, err)
	}
	if _, _, err := AppendJSON(nil, s, nil); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "exceeds") {
		t.Fatalf("err = %v", err)
	}
}

// FuzzAppendJSON: a schema then a value, both untrusted. AppendJSON fails
// with ErrCorrupt, or writes valid JSON and consumes what SkipFunc says
// the value takes.
func FuzzAppendJSON(f *testing.F) {
	add := func(s Schema, v []byte) { f.Add(append(AppendSchema(nil, s), v...)) }
	if c, err := For[Order](); err == nil {
		add(mustSchema[Order](f), c.Append(nil, Order{ID: 3, Name: "n", Amounts: []int32{1}, Meta: map[string]uint16{"a": 1}, Next: &Order{}}))
	}
	if c, err := For[jsonOuter](); err == nil {
		add(mustSchema[jsonOuter](f), c.Append(nil, jsonOuter{Name: "x", Ptr: &jsonInner{}, ByKey: map[string]int32{"a": 1}}))
	}
	if c, err := For[map[jsonInner2][]float64](); err == nil {
		add(mustSchema[map[jsonInner2][]float64](f), c.Append(nil, map[jsonInner2][]float64{{1, 2}: {math.NaN()}}))
	}
	add(mustSchema[Node](f), []byte{1, 2, 1, 4, 0})
	add(mustSchema[time.Time](f), []byte{0})
	f.Add([]byte{SchemaFormatVersion, byte(kindArray), 0xff, 0xff, 0x0f, byte(kindStruct), 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		defer func(n int) { maxJSONOutput = n }(maxJSONOutput)
		maxJSONOutput = 1 << 16
		s, n, err := DecodeSchema(in)
		if err != nil {
			return
		}
		src := in[n:]
		out, m, err := AppendJSON(nil, s, src)
		skipped, skipErr := SkipFunc(s)(src)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("AppendJSON(%s, %x): %v, want ErrCorrupt", s, src, err)
			}
			if skipErr == nil && !strings.Contains(err.Error(), "exceeds") && !strings.Contains(err.Error(), "deeper") && !strings.Contains(err.Error(), "time.Time") {
				// The skipper checks a time's length only; AppendJSON
				// decodes it.
				t.Fatalf("AppendJSON(%s, %x) fails (%v) where SkipFunc passes %d bytes", s, src, err, skipped)
			}
			return
		}
		if m < 0 || m > len(src) {
			t.Fatalf("consumed %d of %d bytes", m, len(src))
		}
		if skipErr != nil || skipped != m {
			t.Fatalf("AppendJSON consumed %d, SkipFunc %d (%v)", m, skipped, skipErr)
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON %q from %s, %x", out, s, src)
		}
	})
}
