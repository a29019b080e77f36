package codec

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

type flatInner struct {
	A int64
	B UserID // a named integer: its underlying kind's encoding
	C bool
}

type flatAll struct {
	I   int
	I8  int8
	I16 int16
	I32 int32
	In  flatInner
	U   uint
	U8  uint8
	U16 uint16
	U32 uint32
	U64 uint64
	F32 float32
	F64 float64
	_   struct{}
	Z   bool
}

// TestFlatMatchesFields: a struct of fixed-size leaves encodes (in one
// loop over its leaves) to exactly what its fields' own codecs write one
// after another, and decodes back.
func TestFlatMatchesFields(t *testing.T) {
	c, err := For[flatAll]()
	if err != nil {
		t.Fatal(err)
	}
	if p := c.(*planCodec[flatAll]).p; len(p.flat) != 15 {
		t.Fatalf("flatAll has %d flat leaves, want 15", len(p.flat))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		v := flatAll{
			I: int(rng.Int64()) >> rng.IntN(64), I8: int8(rng.Int()), I16: int16(rng.Int()), I32: int32(rng.Int()),
			In: flatInner{A: rng.Int64() - math.MaxInt64/2, B: UserID(-rng.Int64N(1000)), C: rng.IntN(2) == 0},
			U:  uint(rng.Uint64() >> rng.IntN(64)), U8: uint8(rng.Uint32()), U16: uint16(rng.Uint32()), U32: rng.Uint32(), U64: rng.Uint64(),
			F32: float32(rng.NormFloat64()), F64: rng.NormFloat64(), Z: rng.IntN(2) == 0,
		}
		var want []byte
		want = appendWith(t, want, v.I)
		want = appendWith(t, want, v.I8)
		want = appendWith(t, want, v.I16)
		want = appendWith(t, want, v.I32)
		want = appendWith(t, want, v.In.A)
		want = appendWith(t, want, v.In.B)
		want = appendWith(t, want, v.In.C)
		want = appendWith(t, want, v.U)
		want = appendWith(t, want, v.U8)
		want = appendWith(t, want, v.U16)
		want = appendWith(t, want, v.U32)
		want = appendWith(t, want, v.U64)
		want = appendWith(t, want, v.F32)
		want = appendWith(t, want, v.F64)
		want = appendWith(t, want, v.Z)
		got := c.Append(nil, v)
		if !bytes.Equal(got, want) {
			t.Fatalf("%+v encodes to %x, its fields to %x", v, got, want)
		}
		back, n, err := c.Decode(got)
		if err != nil || n != len(got) || back != v {
			t.Fatalf("%+v decodes to %+v, %d of %d bytes, %v", v, back, n, len(got), err)
		}
	}
}

func appendWith[T any](t *testing.T, dst []byte, v T) []byte {
	c, err := For[T]()
	if err != nil {
		t.Fatal(err)
	}
	return c.Append(dst, v)
}

// TestFlatOnlyFixedLeaves: structs with a string, a slice, a pointer, a
// time or a marshaler keep their per-field plans.
func TestFlatOnlyFixedLeaves(t *testing.T) {
	for name, c := range map[string]*plan{
		"Order":    mustPlan[Order](t),
		"Inner":    mustPlan[Inner](t),
		"struct{}": mustPlan[struct{}](t),
	} {
		if c.flat != nil {
			t.Errorf("%s: flat %v, want its fields' plans", name, c.flat)
		}
	}
}

func mustPlan[T any](t *testing.T) *plan {
	p, err := newPlanner().build(reflect.TypeFor[T]())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type benchEvent struct {
	Event   struct{ I, Account, Amount int64 }
	Created int64
}

// BenchmarkStructAppendFrom: a record of four int64 (bench weak's), as a
// channel's batch codec encodes it.
//
//	go test ./internal/codec -run XXX -bench StructAppendFrom
func BenchmarkStructAppendFrom(b *testing.B) {
	c, err := For[benchEvent]()
	if err != nil {
		b.Fatal(err)
	}
	pc := c.(PointerCodec[benchEvent])
	recs := make([]benchEvent, 1024)
	for i := range recs {
		recs[i] = benchEvent{Created: int64(i) << 30}
		recs[i].Event.I, recs[i].Event.Account, recs[i].Event.Amount = int64(i)*1000, int64(i%1000), int64(i%97)
	}
	var buf []byte
	for b.Loop() {
		buf = buf[:0]
		for i := range recs {
			buf = pc.AppendFrom(buf, &recs[i])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(recs)), "ns/record")
}

// TestFlatVarintBoundaries: the flat encoder's varints are
// binary.AppendUvarint's and binary.AppendVarint's bytes at every length,
// on both sides of each 7-bit boundary, and for the most negative values.
func TestFlatVarintBoundaries(t *testing.T) {
	type pair struct {
		U uint64
		I int64
	}
	c, err := For[pair]()
	if err != nil {
		t.Fatal(err)
	}
	if p := c.(*planCodec[pair]).p; len(p.flat) != 2 {
		t.Fatalf("pair has %d flat leaves, want 2", len(p.flat))
	}
	var us []uint64
	for k := range 65 {
		x := uint64(1)<<k - 1 // k one bits; 2^64-1 at k = 64
		us = append(us, x, x+1, x-1, x>>1, ^x)
	}
	for _, u := range us {
		i := int64(u)
		for _, v := range []pair{{u, i}, {u, -i}, {u, i >> 1}, {u, math.MinInt64}, {u, math.MaxInt64}} {
			want := binary.AppendVarint(binary.AppendUvarint(nil, v.U), v.I)
			// Behind other bytes, with spare capacity left after them.
			got := c.Append(make([]byte, 3, 64), v)[3:]
			if !bytes.Equal(got, want) {
				t.Fatalf("%+v encodes to %x, want %x", v, got, want)
			}
		}
	}
}
