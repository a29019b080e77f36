package network

import "math/bits"

// modulus computes x % d for 32-bit x with two multiplications instead of a
// division (Lemire, Kaser, Kurz: "Faster remainder by direct computation",
// 2019). The hash partitioner takes a key group modulo max parallelism for
// every record, and a hardware divide by a divisor unknown at compile time
// cost more than all the other per-record work of Emit together.
type modulus struct {
	d uint64
	m uint64 // ceil(2^64 / d)
}

func newModulus(d uint32) modulus {
	return modulus{d: uint64(d), m: ^uint64(0)/uint64(d) + 1}
}

// of returns x % d.
func (f modulus) of(x uint32) uint32 {
	low := f.m * uint64(x)
	hi, _ := bits.Mul64(low, f.d)
	return uint32(hi)
}
