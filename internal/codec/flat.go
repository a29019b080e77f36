package codec

import (
	"encoding/binary"
	"math"
	"slices"
	"unsafe"
)

// A struct whose fields are all fixed-size leaves (bools, integers,
// floats, and structs of those, such as the records most jobs send) is
// encoded by one loop over its leaves instead of a call through each
// field's plan: the bytes are the same (each leaf as its codec in
// primitive.go writes it), in about half the time. Channels that encode
// every record (remote channels, the in-flight logs a WEAKLY_CONSISTENT
// snapshot stores) spend most of their encoding time here.

// flatKind is how a leaf is encoded.
type flatKind uint8

const (
	flatBool flatKind = iota
	flatInt
	flatInt8
	flatInt16
	flatInt32
	flatInt64
	flatUint
	flatUint8
	flatUint16
	flatUint32
	flatUint64
	flatFloat32
	flatFloat64
)

// flatOp is one leaf, at off from the start of the value.
type flatOp struct {
	off  uintptr
	kind flatKind
}

// maxFlatOps bounds the leaves of a flat struct: a larger one keeps its
// per-field plan (the loop would gain little).
const maxFlatOps = 64

// flatLeaf marks leaf plan p as encoded by kind.
func flatLeaf(p *plan, kind flatKind) *plan {
	p.flat = []flatOp{{kind: kind}}
	return p
}

// flatFields returns the leaves of a struct with fields, or nil when a
// field is not flat.
func flatFields(fields []fieldPlan) []flatOp {
	var out []flatOp
	for _, f := range fields {
		if f.plan.flat == nil || len(out)+len(f.plan.flat) > maxFlatOps {
			return nil
		}
		for _, op := range f.plan.flat {
			out = append(out, flatOp{off: f.off + op.off, kind: op.kind})
		}
	}
	if len(out) == 0 {
		return nil // struct{}: nothing to loop over
	}
	return out
}

// flatEnc encodes the leaves ops in order: into room made once for the
// longest encoding, so no leaf checks the capacity.
// Each varint leaf is zigzagged here and written by the inlined
// binary.PutUvarint, rather than by a call to binary.PutVarint (too large
// to inline): the loop is all this package's code, and its speed does not
// depend on where the linker puts encoding/binary.
//
// flatEnc is not inlined: when it is (into structPlan), the copy of the
// closure made there keeps the calls in its body as calls (zigzag,
// binary.PutUvarint, the float stores; go1.26, seen with go tool
// objdump), one or two per leaf. Compiled on its own, the closure has
// them inlined.
//
//go:noinline
func flatEnc(ops []flatOp) func(dst []byte, p unsafe.Pointer, _ int) []byte {
	most := 0
	for _, op := range ops {
		switch op.kind {
		case flatBool:
			most++
		case flatFloat32:
			most += 4
		case flatFloat64:
			most += 8
		default:
			most += binary.MaxVarintLen64
		}
	}
	return func(dst []byte, p unsafe.Pointer, _ int) []byte {
		n := len(dst)
		if cap(dst)-n < most {
			dst = slices.Grow(dst, most)
		}
		b := dst[n : n+most]
		i := 0
		for _, op := range ops {
			q := unsafe.Add(p, op.off)
			var x uint64 // a varint leaf's unsigned (zigzagged) value
			switch op.kind {
			case flatInt64:
				x = zigzag(*(*int64)(q))
			case flatInt:
				x = zigzag(int64(*(*int)(q)))
			case flatInt32:
				x = zigzag(int64(*(*int32)(q)))
			case flatInt16:
				x = zigzag(int64(*(*int16)(q)))
			case flatInt8:
				x = zigzag(int64(*(*int8)(q)))
			case flatUint64:
				x = *(*uint64)(q)
			case flatUint:
				x = uint64(*(*uint)(q))
			case flatUint32:
				x = uint64(*(*uint32)(q))
			case flatUint16:
				x = uint64(*(*uint16)(q))
			case flatUint8:
				x = uint64(*(*uint8)(q))
			case flatBool:
				b[i] = 0
				if *(*bool)(q) {
					b[i] = 1
				}
				i++
				continue
			case flatFloat32:
				binary.LittleEndian.PutUint32(b[i:], math.Float32bits(*(*float32)(q)))
				i += 4
				continue
			case flatFloat64:
				binary.LittleEndian.PutUint64(b[i:], math.Float64bits(*(*float64)(q)))
				i += 8
				continue
			}
			i += binary.PutUvarint(b[i:], x)
		}
		return dst[:n+i]
	}
}

// zigzag maps a signed integer to the unsigned one binary.PutVarint
// writes: 0, -1, 1, -2, ... to 0, 1, 2, 3, ...
func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }
