package nexmark

import (
	"math"
	"math/bits"
)

// seedKey separates the generator's streams from other uses of splitmix64
// with small seeds ("nexmark\x01" as a little-endian word).
const seedKey = 0x016b72616d78656e

// gamma is splitmix64's increment (the odd integer nearest 2⁶⁴/φ).
const gamma = 0x9e3779b97f4a7c15

// mix64 is splitmix64's finalizer (Stafford's Mix13).
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// rng is a splitmix64 stream. Event n's stream starts at state
// mix64(n ^ seedKey), so that the streams of consecutive events are not
// shifted copies of one another; draw k (k = 1, 2, …) is then
// mix64(state + k·gamma).
type rng struct{ s uint64 }

// eventRand returns event n's stream.
func eventRand(n int64) rng { return rng{mix64(uint64(n) ^ seedKey)} }

func (r *rng) next() uint64 {
	r.s += gamma
	return mix64(r.s)
}

// intn returns a draw in [0, n) for n ≥ 1: the high word of next()·n
// (Lemire's multiply-shift; the bias is below n/2⁶⁴).
func (r *rng) intn(n int64) int64 {
	hi, _ := bits.Mul64(r.next(), uint64(n))
	return int64(hi)
}

// float returns a draw in [0, 1) with 53 random bits.
func (r *rng) float() float64 { return float64(r.next()>>11) * 0x1p-53 }

// price is Flink's PriceGenerator.nextPrice, round(10^(u·6)·100) for a
// uniform u in [0, 1): cents from 100 up to 10⁸. 10^x is a table of
// 10^(i/256) times a degree-4 polynomial of e^d for the remainder
// d < ln 10/256 (relative error below 10⁻¹²: math.Exp and math.Pow were
// most of the generator's time). It may differ from the exact power in the
// last bits, which the rounding to a whole cent hides but for a vanishing
// share of draws; the distribution is Flink's.
func (r *rng) price() int64 {
	x := r.float() * (6 * priceSteps)
	i := int(x)
	d := (x - float64(i)) * (math.Ln10 / priceSteps)
	p := 1 + d*(1+d*(1.0/2+d*(1.0/6+d*(1.0/24))))
	return int64(pow10Table[i]*p + 0.5) // round half up: the value is positive
}

// priceSteps is the number of table entries per decade.
const priceSteps = 256

// pow10Table[i] is 100·10^(i/priceSteps).
var pow10Table = func() (t [6 * priceSteps]float64) {
	for i := range t {
		t[i] = 100 * math.Pow(10, float64(i)/priceSteps)
	}
	return t
}()
