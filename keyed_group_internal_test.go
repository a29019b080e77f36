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
