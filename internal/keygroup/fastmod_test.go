package keygroup

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestModulusMatchesRemainder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	divisors := []uint32{1, 2, 3, 5, 7, 100, 128, 1000, 32767, 32768, math.MaxUint32}
	for range 50 {
		divisors = append(divisors, 1+rng.Uint32N(1<<15))
	}
	for _, d := range divisors {
		f := NewModulus(d)
		xs := []uint32{0, 1, d - 1, d, d + 1, math.MaxUint32, math.MaxUint32 - 1}
		for range 2000 {
			xs = append(xs, rng.Uint32())
		}
		for _, x := range xs {
			if got, want := f.Of(x), x%d; got != want {
				t.Fatalf("%d %% %d: got %d, want %d", x, d, got, want)
			}
		}
	}
}
