package codec

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Versions of a state type, as successive releases of a program declare
// them. Struct type names are informational in schemas, so each version
// can be its own Go type here.

type TotalV1 struct {
	User       string
	Count, Sum int64
}

type TotalRenamedType struct { // only the Go type's name differs
	User       string
	Count, Sum int64
}

type TotalAdded struct {
	User       string
	Count, Sum int64
	Max        int64
}

type TotalDropped struct {
	User string
	Sum  int64
}

type TotalReordered struct {
	Sum   int64
	User  string
	Count int64
}

type TotalTagRenamed struct {
	Name       string `weir:"User"`
	Count, Sum int64
}

type TotalWidened struct {
	User  string
	Count int64
	Sum   int64
}

type TotalNarrow struct {
	User  string
	Count int32
	Sum   int8
}

type TotalPointers struct {
	User  *string
	Count *int64
	Sum   int64
}

type Ratios32 struct{ A, B float32 }

type Ratios64 struct{ A, B float64 }

type NestedV1 struct {
	Totals []TotalV1
	ByUser map[string]TotalV1
	Last   *TotalV1
	Window [2]Ratios32
	Keys   map[int32]bool
}

type NestedV2 struct {
	Keys   map[int64]bool
	Window [2]Ratios64
	ByUser map[string]*TotalAdded
	Totals []TotalReordered
	Last   TotalDropped
}

type NodeV1 struct {
	V    int32
	Next *NodeV1
}

type NodeV2 struct {
	Extra string
	Next  *NodeV2
	V     int64
}

type DroppedDeep struct {
	Keep int
	Tree Tree // dropped in KeptOnly: skipped by the writer's schema
	Tail string
}

type KeptOnly struct {
	Tail string
	Keep int
}

// evolve encodes w with its own codec and decodes the bytes as R through
// Resolve with w's schema.
func evolve[W, R any](t *testing.T, w W) (R, Compatibility, error) {
	t.Helper()
	var zero R
	c, err := For[W]()
	if err != nil {
		t.Fatal(err)
	}
	d, compat, err := Resolve[R](schemaOf[W](t))
	if err != nil {
		return zero, compat, err
	}
	enc := c.Append(nil, w)
	got, n, err := d.Decode(append(enc, 0xee))
	if err != nil || n != len(enc) {
		t.Fatalf("%T as %T (%v): decoded %d of %d bytes: %v", w, zero, compat, n, len(enc), err)
	}
	// A migration decoder decodes in place too, to the same value.
	if pd, ok := d.(interface {
		DecodeInto([]byte, *R) (int, error)
	}); ok {
		var in R
		if m, err := pd.DecodeInto(enc, &in); err != nil || m != n || !reflect.DeepEqual(in, got) {
			t.Fatalf("%T as %T: DecodeInto gave %+v, %d, %v; Decode gave %+v", w, zero, in, m, err, got)
		}
	}
	// Every strict prefix is truncated input, through conversions too.
	for i := range len(enc) {
		if _, _, err := d.Decode(enc[:i]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%T as %T: %d-byte prefix: %v, want ErrCorrupt", w, zero, i, err)
		}
	}
	return got, compat, nil
}

func expect[W, R any](t *testing.T, w W, want R, wantCompat Compatibility) {
	t.Helper()
	got, compat, err := evolve[W, R](t, w)
	if err != nil {
		t.Fatalf("%T as %T: %v", w, want, err)
	}
	if compat != wantCompat {
		t.Errorf("%T as %T: %v, want %v", w, want, compat, wantCompat)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%T as %T: got %+v, want %+v", w, want, got, want)
	}
}

func ptr[T any](v T) *T { return &v }

func TestEvolutionRules(t *testing.T) {
	v1 := TotalV1{User: "ann", Count: 3, Sum: -40}
	t.Run("identical", func(t *testing.T) { expect(t, v1, v1, Identical) })
	t.Run("struct type renamed", func(t *testing.T) {
		expect(t, v1, TotalRenamedType{User: "ann", Count: 3, Sum: -40}, CompatibleAsIs)
	})
	t.Run("field added", func(t *testing.T) {
		expect(t, v1, TotalAdded{User: "ann", Count: 3, Sum: -40}, CompatibleAfterMigration)
	})
	t.Run("field dropped", func(t *testing.T) {
		expect(t, v1, TotalDropped{User: "ann", Sum: -40}, CompatibleAfterMigration)
	})
	t.Run("fields reordered", func(t *testing.T) {
		expect(t, v1, TotalReordered{Sum: -40, User: "ann", Count: 3}, CompatibleAfterMigration)
	})
	t.Run("field renamed through its tag", func(t *testing.T) {
		expect(t, v1, TotalTagRenamed{Name: "ann", Count: 3, Sum: -40}, CompatibleAsIs)
	})
	t.Run("integers widened", func(t *testing.T) {
		expect(t, TotalNarrow{User: "b", Count: -1 << 31, Sum: -128}, TotalWidened{User: "b", Count: -1 << 31, Sum: -128}, CompatibleAsIs)
		expect(t, int8(-5), int(-5), CompatibleAsIs)
		expect(t, uint16(65535), uint64(65535), CompatibleAsIs)
		expect(t, UserID(7), int64(7), Identical) // a named type is its kind
	})
	t.Run("float32 widened", func(t *testing.T) {
		expect(t, float32(1.5), float64(1.5), CompatibleAfterMigration)
		expect(t, Ratios32{A: 0.25, B: -3}, Ratios64{A: 0.25, B: -3}, CompatibleAfterMigration)
	})
	t.Run("value to pointer", func(t *testing.T) {
		expect(t, v1, TotalPointers{User: ptr("ann"), Count: ptr[int64](3), Sum: -40}, CompatibleAfterMigration)
		expect(t, int32(9), ptr(ptr[int64](9)), CompatibleAfterMigration)
	})
	t.Run("pointer to value", func(t *testing.T) {
		expect(t, TotalPointers{User: ptr("c"), Count: nil, Sum: 1}, TotalV1{User: "c", Sum: 1}, CompatibleAfterMigration)
		expect(t, (*int64)(nil), int64(0), CompatibleAfterMigration)
		expect(t, ptr[float32](2), float64(2), CompatibleAfterMigration)
	})
	t.Run("nested", func(t *testing.T) {
		w := NestedV1{
			Totals: []TotalV1{v1, {User: "bo"}},
			ByUser: map[string]TotalV1{"ann": v1, "x": {}},
			Last:   &TotalV1{User: "last", Count: 1, Sum: 2},
			Window: [2]Ratios32{{A: 1}, {B: 2}},
			Keys:   map[int32]bool{-1: true, 1 << 30: false},
		}
		want := NestedV2{
			Keys:   map[int64]bool{-1: true, 1 << 30: false},
			Window: [2]Ratios64{{A: 1}, {B: 2}},
			ByUser: map[string]*TotalAdded{"ann": {User: "ann", Count: 3, Sum: -40}, "x": {}},
			Totals: []TotalReordered{{User: "ann", Count: 3, Sum: -40}, {User: "bo"}},
			Last:   TotalDropped{User: "last", Sum: 2},
		}
		expect(t, w, want, CompatibleAfterMigration)
		expect(t, NestedV1{}, NestedV2{}, CompatibleAfterMigration) // nils stay nil; a nil *T is T's zero
		expect(t, map[float32][]int8{1.5: {1, -1}, 2: nil}, map[float64][]int64{1.5: {1, -1}, 2: nil}, CompatibleAfterMigration)
	})
	t.Run("recursive", func(t *testing.T) {
		w := &NodeV1{V: 1, Next: &NodeV1{V: -2, Next: &NodeV1{V: 3}}}
		want := &NodeV2{V: 1, Next: &NodeV2{V: -2, Next: &NodeV2{V: 3}}}
		expect(t, w, want, CompatibleAfterMigration)
		expect(t, Loop{{}, {{}, nil}}, Loop{{}, {{}, nil}}, Identical)
	})
	t.Run("dropped field of a recursive type is skipped", func(t *testing.T) {
		tree := Tree{Label: "r", Children: []Tree{{Label: "c", Index: map[string]*Tree{"k": {Label: "k"}, "nil": nil}}}}
		tree.Parent = &Tree{Label: "p"}
		expect(t, DroppedDeep{Keep: 4, Tree: tree, Tail: "end"}, KeptOnly{Tail: "end", Keep: 4}, CompatibleAfterMigration)
	})
}

type WithAddr struct{ Peer netip.Addr }

type WithPrefix struct{ Peer netip.Prefix }

type CountString struct {
	User  string
	Count string
	Sum   int64
}

type StatsV1 struct{ Stats []TotalV1 }

type StatsBad struct{ Stats []CountString }

type KeyV1 struct{ A, B int }

type KeyDropped struct{ A int }

type KeyedV1 struct{ Index map[KeyV1]string }

type KeyedDropped struct{ Index map[KeyDropped]string }

type PtrKeyed struct{ Index map[*int]bool }

type ValKeyed struct{ Index map[int]bool }

type ManyBad struct {
	User  []string
	Count uint64
	Sum   float64
}

type Arr3 struct{ A [3]int }

type Arr4 struct{ A [4]int }

type SliceField struct{ A []int }

type MapField struct{ A map[int]int }

type TimeField struct{ At time.Time }

type TimeString struct{ At string }

func TestIncompatible(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want []string // each Mismatch's String, in order
	}{
		{"kind changed", resolveErr[TotalV1, CountString](t),
			[]string{"CountString.Count: was int64, now string: int64 values cannot be read as string; keep the old type, or add a field under a new name for the new type (the old field's state is then dropped)"}},
		{"narrowed", resolveErr[TotalV1, TotalNarrow](t),
			[]string{"TotalNarrow.Count: was int64, now int32: narrowing can lose values; keep int64 or wider",
				"TotalNarrow.Sum: was int64, now int8: narrowing can lose values; keep int64 or wider"}},
		{"float narrowed", resolveErr[float64, float32](t),
			[]string{"float32: was float64, now float32: narrowing loses precision; keep float64"}},
		{"signedness", resolveErr[uint32, int64](t),
			[]string{"int64: was uint32, now int64: signed and unsigned integers are encoded differently and do not hold the same values; keep uint32"}},
		{"nested in a slice", resolveErr[StatsV1, StatsBad](t),
			[]string{"StatsBad.Stats[].Count: was int64, now string: int64 values cannot be read as string; keep the old type, or add a field under a new name for the new type (the old field's state is then dropped)"}},
		{"struct became a leaf", resolveErr[StatsV1, int64](t),
			[]string{"int64: was struct codec.StatsV1{Stats []struct codec.TotalV1{User string; Count int64; Sum int64}}, now int64: struct values cannot be read as int64; keep the old type, or add a field under a new name for the new type (the old field's state is then dropped)"}},
		{"container kind changed", resolveErr[SliceField, MapField](t),
			[]string{"MapField.A: was []int64, now map[int64]int64: slice values cannot be read as map; keep the old type, or add a field under a new name for the new type (the old field's state is then dropped)"}},
		{"array length", resolveErr[Arr3, Arr4](t),
			[]string{"Arr4.A: was [3]int64, now [4]int64: the array length changed from 3 to 4; keep 3"}},
		{"another marshaler", resolveErr[WithAddr, WithPrefix](t),
			[]string{"WithPrefix.Peer: was marshaler net/netip.Addr, now marshaler net/netip.Prefix: bytes written by one type's MarshalBinary are not another's to read; keep net/netip.Addr (or give the new type an UnmarshalBinary that reads them and the old name)"}},
		{"time to string", resolveErr[TimeField, TimeString](t),
			[]string{"TimeString.At: was time.Time, now string: time.Time values cannot be read as string; keep the old type, or add a field under a new name for the new type (the old field's state is then dropped)"}},
		{"field dropped from a map key", resolveErr[KeyedV1, KeyedDropped](t),
			[]string{"KeyedDropped.Index[key].B: was int64, now no such field: dropping a field from a map key can make two keys one; keep the field"}},
		{"pointer dropped from a map key", resolveErr[PtrKeyed, ValKeyed](t),
			[]string{"ValKeyed.Index[key]: was *int64, now int64: a nil key and a key pointing to the zero value would become one key; keep the pointer"}},
		{"every mismatch listed", resolveErr[TotalV1, ManyBad](t),
			[]string{"ManyBad.User: was string, now []string: string values cannot be read as slice; keep the old type, or add a field under a new name for the new type (the old field's state is then dropped)",
				"ManyBad.Count: was int64, now uint64: signed and unsigned integers are encoded differently and do not hold the same values; keep int64",
				"ManyBad.Sum: was int64, now float64: int64 values cannot be read as float64; keep the old type, or add a field under a new name for the new type (the old field's state is then dropped)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ie *IncompatibleError
			if !errors.Is(tc.err, ErrIncompatible) || !errors.As(tc.err, &ie) {
				t.Fatalf("err = %v, want an *IncompatibleError wrapping ErrIncompatible", tc.err)
			}
			var got []string
			for _, m := range ie.Mismatches {
				got = append(got, m.String())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("mismatches:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			for _, w := range tc.want {
				if !strings.Contains(tc.err.Error(), w) {
					t.Fatalf("Error() %q does not say %q", tc.err, w)
				}
			}
		})
	}
}

func resolveErr[W, R any](t *testing.T) error {
	t.Helper()
	d, compat, err := Resolve[R](schemaOf[W](t))
	if err == nil || d != nil || compat != Incompatible {
		t.Fatalf("Resolve[%T](%T's schema) = %v, %v, %v; want Incompatible", *new(R), *new(W), d, compat, err)
	}
	return err
}

func TestResolveErrorsOtherThanIncompatible(t *testing.T) {
	if _, _, err := Resolve[chan int](schemaOf[int](t)); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("reader without a codec: %v, want ErrUnsupported", err)
	}
	if _, c, err := Resolve[int](Schema{}); err == nil || c != Incompatible || !strings.Contains(err.Error(), "no writer schema") {
		t.Fatalf("zero writer schema: %v, %v", c, err)
	}
}

// TestIdenticalAndAsIsUseTheCodec: no conversion means For's own codec,
// at its speed.
func TestIdenticalAndAsIsUseTheCodec(t *testing.T) {
	d, _, err := Resolve[TotalV1](schemaOf[TotalV1](t))
	if _, ok := d.(*planCodec[TotalV1]); err != nil || !ok {
		t.Fatalf("identical: decoder %T, %v; want the plan codec", d, err)
	}
	d2, _, err := Resolve[TotalWidened](schemaOf[TotalNarrow](t))
	if _, ok := d2.(*planCodec[TotalWidened]); err != nil || !ok {
		t.Fatalf("as is: decoder %T, %v; want the plan codec", d2, err)
	}
}

// TestMigrationAllocatesAsDecodeDoes: converting costs no allocation per
// value beyond the reader's own decoder's (here: the User string).
func TestMigrationAllocatesAsDecodeDoes(t *testing.T) {
	old, _ := For[TotalV1]()
	enc := old.Append(nil, TotalV1{User: "ann", Count: 3, Sum: -40})
	d, _, err := Resolve[TotalAdded](schemaOf[TotalV1](t))
	if err != nil {
		t.Fatal(err)
	}
	pd := d.(interface {
		DecodeInto([]byte, *TotalAdded) (int, error)
	})
	newC, _ := For[TotalAdded]()
	newEnc := newC.Append(nil, TotalAdded{User: "ann", Count: 3, Sum: -40, Max: 9})
	own := testing.AllocsPerRun(100, func() {
		var v TotalAdded
		if _, err := newC.(PointerCodec[TotalAdded]).DecodeInto(newEnc, &v); err != nil {
			t.Fatal(err)
		}
	})
	migrated := testing.AllocsPerRun(100, func() {
		var v TotalAdded
		if _, err := pd.DecodeInto(enc, &v); err != nil {
			t.Fatal(err)
		}
	})
	if migrated > own {
		t.Fatalf("migrating decode allocates %v times, the reader's own %v", migrated, own)
	}
}

type TotalRenamedNoTag struct {
	Name       string // was User, without a tag: a drop and an add
	Count, Sum int64
}

func TestChanges(t *testing.T) {
	cases := []struct {
		name string
		got  []Change
		want []string
	}{
		{"identical", changes[TotalV1, TotalV1](t), nil},
		{"struct type renamed", changes[TotalV1, TotalRenamedType](t),
			[]string{"TotalRenamedType: struct type renamed from codec.TotalV1 to codec.TotalRenamedType"}},
		{"added", changes[TotalV1, TotalAdded](t), []string{
			"TotalAdded: struct type renamed from codec.TotalV1 to codec.TotalAdded",
			"TotalAdded.Max: added: restores as the zero value"}},
		{"renamed without a tag", changes[TotalV1, TotalRenamedNoTag](t), []string{
			"TotalRenamedNoTag: struct type renamed from codec.TotalV1 to codec.TotalRenamedNoTag",
			"TotalRenamedNoTag.Name: added: restores as the zero value",
			"TotalRenamedNoTag.User: dropped: its stored values are discarded (to rename a field, keep its identity with `weir:\"User\"`)"}},
		{"reordered and widened", changes[TotalNarrow, TotalReordered](t), []string{
			"TotalReordered: struct type renamed from codec.TotalNarrow to codec.TotalReordered",
			"TotalReordered.Count: widened from int32 to int64",
			"TotalReordered.Sum: widened from int8 to int64",
			"TotalReordered: fields reordered"}},
		{"pointers", changes[TotalV1, TotalPointers](t), []string{
			"TotalPointers: struct type renamed from codec.TotalV1 to codec.TotalPointers",
			"TotalPointers.User: now a pointer: never nil after restore",
			"TotalPointers.Count: now a pointer: never nil after restore"}},
		{"nested", changes[[]*float32, []float64](t), []string{
			"[]float64[]: no longer a pointer: a stored nil restores as the zero value",
			"[]float64[]: widened from float32 to float64"}},
	}
	for _, tc := range cases {
		var got []string
		for _, c := range tc.got {
			got = append(got, c.String())
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: changes\n%s\nwant\n%s", tc.name, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
	if _, err := Changes[CountString](schemaOf[TotalV1](t)); !errors.Is(err, ErrIncompatible) {
		t.Errorf("incompatible: err %v, want ErrIncompatible", err)
	}
}

func changes[W, R any](t *testing.T) []Change {
	t.Helper()
	c, err := Changes[R](schemaOf[W](t))
	if err != nil {
		t.Fatalf("Changes[%T](%T): %v", *new(R), *new(W), err)
	}
	return c
}
