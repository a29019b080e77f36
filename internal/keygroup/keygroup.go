// Package keygroup maps keys to key groups and key groups to subtasks.
//
// A key's group is murmur(hash(key)) mod maxParallelism; a subtask of an
// operator with parallelism p owns a contiguous range of key groups. This is
// the scheme of Flink's KeyGroupRangeAssignment, so state redistributes by
// whole key groups when parallelism changes, and a key never moves between
// groups. Hashes are stable across processes and Go versions: no random
// seeds, no maphash.
//
// Owns: key hashing and key-group ranges, a format every checkpoint depends
// on. Must not touch: state or the runtime (checked by internal/archtest).
package keygroup

import "fmt"

// DefaultMaxParallelism is the number of key groups when none is configured.
const DefaultMaxParallelism = 128

// UpperBoundMaxParallelism bounds the configurable number of key groups.
const UpperBoundMaxParallelism = 1 << 15

// Range is a half-open range [Start, End) of key groups.
type Range struct {
	Start, End int
}

// Contains reports whether kg lies in r.
func (r Range) Contains(kg int) bool { return kg >= r.Start && kg < r.End }

// Len is the number of key groups in r.
func (r Range) Len() int { return r.End - r.Start }

// String renders the range as [start, end).
func (r Range) String() string { return fmt.Sprintf("[%d,%d)", r.Start, r.End) }

// Of returns the key group of a key whose stable hash is h.
func Of(h uint32, maxParallelism int) int {
	return int(Mix(h) % uint32(maxParallelism))
}

// Mix is the murmur3 finalizer; it spreads hashes whose entropy sits in a
// few bits (small integers) over all 32 bits before the modulo.
func Mix(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// OperatorIndex returns the subtask that owns key group kg.
func OperatorIndex(kg, maxParallelism, parallelism int) int {
	return kg * parallelism / maxParallelism
}

// RangeFor returns the key groups owned by subtask index of an operator with
// the given parallelism. The ranges of all subtasks partition
// [0, maxParallelism) and agree with OperatorIndex.
func RangeFor(maxParallelism, parallelism, index int) Range {
	start := (index*maxParallelism + parallelism - 1) / parallelism
	end := ((index+1)*maxParallelism + parallelism - 1) / parallelism
	return Range{Start: start, End: end}
}

// ValidateParallelism checks a parallelism against a max parallelism.
func ValidateParallelism(parallelism, maxParallelism int) error {
	if maxParallelism < 1 || maxParallelism > UpperBoundMaxParallelism {
		return fmt.Errorf("max parallelism %d out of range [1, %d]", maxParallelism, UpperBoundMaxParallelism)
	}
	if parallelism < 1 || parallelism > maxParallelism {
		return fmt.Errorf("parallelism %d out of range [1, max parallelism %d]", parallelism, maxParallelism)
	}
	return nil
}
