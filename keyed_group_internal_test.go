package weir

import (
	"math/rand/v2"
	"testing"

	"github.com/weirstream/weir/internal/keygroup"
)

// keyGroup is keygroup.Modulus.Group written out for pushKeyed; the
// network writer routes with the latter, so the two must agree on every
// hash and max parallelism.
func TestKeyGroupMatchesKeygroup(t *testing.T) {
	r := rand.New(rand.NewPCG(36, 1))
	for _, maxP := range []uint32{1, 2, 3, 7, 128, 1000, 4096, keygroup.UpperBoundMaxParallelism} {
		m := keygroup.NewModulus(maxP)
		d, c := m.Constants()
		hs := []uint32{0, 1, 2, maxP - 1, maxP, 1 << 31, ^uint32(0)}
		for range 100_000 {
			hs = append(hs, r.Uint32())
		}
		for _, h := range hs {
			if got, want := keyGroup(h, d, c), m.Group(h); got != want {
				t.Fatalf("max parallelism %d, hash %#x: keyGroup = %d, keygroup.Modulus.Group = %d", maxP, h, got, want)
			}
		}
	}
}

// hashUint64 is keygroup.Uint64 written out for pushKeyed, which uses it
// for the keys KeyBy marks intKey; the writer routes with keygroup's.
func TestHashUint64MatchesKeygroup(t *testing.T) {
	r := rand.New(rand.NewPCG(36, 2))
	h, err := keygroup.Hasher[int64]()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range append([]uint64{0, 1, 1 << 63, ^uint64(0)}, func() (vs []uint64) {
		for range 100_000 {
			vs = append(vs, r.Uint64())
		}
		return vs
	}()...) {
		if got, want := hashUint64(v), keygroup.Uint64(v); got != want {
			t.Fatalf("hashUint64(%#x) = %#x, keygroup.Uint64 = %#x", v, got, want)
		}
		if got, want := hashUint64(v), h(int64(v)); got != want {
			t.Fatalf("hashUint64(%#x) = %#x, keygroup.Hasher[int64] = %#x", v, got, want)
		}
	}
	type own int64
	for _, c := range []struct {
		name string
		got  bool
		want bool
	}{
		{"int", keygroup.Uint64Kind[int](), true},
		{"int64", keygroup.Uint64Kind[int64](), true},
		{"uint64", keygroup.Uint64Kind[uint64](), true},
		{"named int64", keygroup.Uint64Kind[own](), true},
		{"int32", keygroup.Uint64Kind[int32](), false},
		{"string", keygroup.Uint64Kind[string](), false},
		{"float64", keygroup.Uint64Kind[float64](), false},
		{"StableHash", keygroup.Uint64Kind[stableKey](), false},
	} {
		if c.got != c.want {
			t.Errorf("Uint64Kind[%s] = %v, want %v", c.name, c.got, c.want)
		}
	}
}

type stableKey int64

func (k stableKey) StableHash() uint32 { return uint32(k) }
