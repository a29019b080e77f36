package bench

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// The state benchmark's workload is a pure function of its flags, so that a
// second process (the restore run) knows which keys the first one wrote and
// with which version, and a value read back can be checked without keeping
// a copy of the state.
//
// Phase 0 loads key i = 0..keys-1 once, with version 0. Phase p ≥ 1 updates
// churn×keys distinct keys with version p: key(p, j) = (offset(p) + j×stride)
// mod keys, where stride is coprime to keys, so j ↦ key is a bijection on
// [0, keys) and a phase never updates a key twice. Every key's value is
// fillValue(key, version of its last update).

// stateUpdate is one record of the workload: set key to the value of version.
type stateUpdate struct {
	Key     int64
	Version int64
}

// minValueBytes is the key and the version a value starts with.
const minValueBytes = 16

// churnSchedule says which keys each phase writes.
type churnSchedule struct {
	keys     uint64
	perPhase int64 // records of a phase ≥ 1
	stride   uint64
}

// newChurnSchedule builds the schedule for keys keys of which churn (a
// fraction in (0, 1]) are updated per phase after the load.
func newChurnSchedule(keys int64, churn float64) (churnSchedule, error) {
	if keys < 1 {
		return churnSchedule{}, fmt.Errorf("keys must be at least 1, got %d", keys)
	}
	if !(churn > 0 && churn <= 1) {
		return churnSchedule{}, fmt.Errorf("churn must be in (0, 1], got %v", churn)
	}
	per := int64(float64(keys) * churn)
	if per < 1 {
		per = 1
	}
	k := uint64(keys)
	// Start near keys/φ so consecutive j land far apart, then walk to the
	// first stride coprime to keys (there is one below keys for keys > 1).
	s := uint64(float64(k)*0.6180339887) | 1
	for s >= k && s > 1 {
		s--
	}
	for s > 1 && gcd(s, k) != 1 {
		s++
		if s >= k {
			s = 1
		}
	}
	if s == 0 {
		s = 1
	}
	return churnSchedule{keys: k, perPhase: per, stride: s}, nil
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// phaseLen is the number of records of phase p.
func (s churnSchedule) phaseLen(p int) int64 {
	if p == 0 {
		return int64(s.keys)
	}
	return s.perPhase
}

// recordsThrough is the number of records of phases 0..p together.
func (s churnSchedule) recordsThrough(p int) int64 {
	return int64(s.keys) + int64(p)*s.perPhase
}

// key returns the key of record j of phase p.
func (s churnSchedule) key(p int, j int64) int64 {
	if p == 0 {
		return j
	}
	hi, lo := bits.Mul64(uint64(j), s.stride)
	off := splitmix64(uint64(p)) % s.keys
	return int64((bits.Rem64(hi, lo, s.keys) + off) % s.keys)
}

// splitmix64 is a well-mixed hash of x (Steele, Lea, Flood 2014).
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// fillValue writes the value of (key, version) into dst: key and version
// (8 bytes each, little endian), then bytes of a xorshift stream seeded by
// both, which Pebble's block compression cannot shrink much (as real
// payloads: ids, hashes, counters).
func fillValue(dst []byte, key, version int64) {
	binary.LittleEndian.PutUint64(dst[0:], uint64(key))
	binary.LittleEndian.PutUint64(dst[8:], uint64(version))
	x := splitmix64(uint64(key)<<20 ^ uint64(version))
	i := minValueBytes
	for ; i+8 <= len(dst); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(dst[i:], x)
	}
	for ; i < len(dst); i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		dst[i] = byte(x)
	}
}

// checkValue reports why v is not a value that key may hold before an
// update to version (an older version of the same key, of the right size).
func checkValue(v []byte, key, version int64, size int) error {
	if len(v) != size {
		return fmt.Errorf("key %d: value of %d bytes, want %d", key, len(v), size)
	}
	k := int64(binary.LittleEndian.Uint64(v[0:]))
	ver := int64(binary.LittleEndian.Uint64(v[8:]))
	if k != key || ver >= version {
		return fmt.Errorf("key %d: holds the value of key %d version %d before the update to version %d", key, k, ver, version)
	}
	return nil
}
