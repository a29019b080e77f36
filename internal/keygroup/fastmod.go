package keygroup

import "math/bits"

// Modulus computes x % d for 32-bit x with two multiplications instead of a
// division (Lemire, Kaser, Kurz: "Faster remainder by direct computation",
// 2019). The hash partitioner and the keyed operator take a key group
// modulo max parallelism for every record, and a hardware divide by a
// divisor unknown at compile time cost more than all the other per-record
// work of the network writer's Emit together.
type Modulus struct {
	d uint64
	m uint64 // ceil(2^64 / d)
}

// NewModulus returns x % d for d > 0.
func NewModulus(d uint32) Modulus {
	return Modulus{d: uint64(d), m: ^uint64(0)/uint64(d) + 1}
}

// Constants returns d and ceil(2^64 / d), for a caller that computes Group
// in its own package (weir's keyed operator: see keyGroup there).
func (f Modulus) Constants() (d, m uint64) { return f.d, f.m }

// Of returns x % d.
func (f Modulus) Of(x uint32) uint32 {
	low := f.m * uint64(x)
	hi, _ := bits.Mul64(low, f.d)
	return uint32(hi)
}

// Group is Of(h, d) for the d of m: the key group of hash h.
func (f Modulus) Group(h uint32) int { return int(f.Of(Mix(h))) }
