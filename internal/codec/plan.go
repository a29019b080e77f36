package codec

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"time"
	"unsafe"
)

// A plan encodes and decodes values of one type through a pointer to them.
// Plans are built once per type by reflection; running one costs no
// reflection for leaves and struct fields, and reflect only to make slices,
// maps and pointers while decoding.
type plan struct {
	typ reflect.Type
	enc func(dst []byte, p unsafe.Pointer, depth int) []byte
	dec func(src []byte, p unsafe.Pointer, depth int) (int, error)
	// minSize is the fewest bytes any value of typ encodes to. Counts read
	// from the input are checked against remaining/minSize, so a corrupt
	// count cannot make a decoder allocate more than the input justifies.
	minSize int
	// flat, when not nil, is enc as a list of fixed-size leaves (flat.go):
	// typ is such a leaf, or a struct made of them.
	flat []flatOp
}

// planSide is what schemas and Resolve need of a plan, kept in the
// planner's side table rather than in plan: enc and dec run for every
// value, and plan keeps the layout they ran at before schemas existed.
type planSide struct {
	// schema describes the bytes enc writes. It is set where enc is, by
	// the same case of the walk, so a Schema cannot drift from the plan.
	schema *node
	// fields are a struct's encoded fields, for Resolve.
	fields []structField
}

// planCodec runs a plan for T.
type planCodec[T any] struct{ p *plan }

func (c *planCodec[T]) Append(dst []byte, v T) []byte {
	return c.p.enc(dst, unsafe.Pointer(&v), 0)
}

func (c *planCodec[T]) Decode(src []byte) (v T, n int, err error) {
	n, err = c.p.dec(src, unsafe.Pointer(&v), 0)
	if err != nil {
		var zero T
		return zero, 0, err
	}
	return v, n, nil
}

// AppendFrom is Append without copying *v to the heap.
func (c *planCodec[T]) AppendFrom(dst []byte, v *T) []byte {
	return c.p.enc(dst, unsafe.Pointer(v), 0)
}

// DecodeInto is Decode into *v, without a heap copy of the value.
func (c *planCodec[T]) DecodeInto(src []byte, v *T) (int, error) {
	return c.p.dec(src, unsafe.Pointer(v), 0)
}

// planner builds plans, remembering the ones under construction so that
// recursive types (type Node struct{ Next *Node }) terminate.
type planner struct {
	done map[reflect.Type]*plan
	side map[*plan]*planSide
}

func newPlanner() *planner {
	return &planner{done: map[reflect.Type]*plan{}, side: map[*plan]*planSide{}}
}

// schema returns the schema node of p, a plan pl built.
func (pl *planner) schema(p *plan) *node { return pl.side[p].schema }

// fields returns the encoded fields of p, a struct plan pl built.
func (pl *planner) fields(p *plan) []structField { return pl.side[p].fields }

// add registers p as t's plan, with its schema node.
func (pl *planner) add(t reflect.Type, p *plan, sn *node) *planSide {
	s := &planSide{schema: sn}
	pl.done[t], pl.side[p] = p, s
	return s
}

// forget drops t's plan p, whose building failed.
func (pl *planner) forget(t reflect.Type, p *plan) {
	delete(pl.done, t)
	delete(pl.side, p)
}

func (pl *planner) build(t reflect.Type) (*plan, error) {
	if p, ok := pl.done[t]; ok {
		return p, nil
	}
	if p, sn := leafPlan(t); p != nil {
		pl.add(t, p, sn)
		return p, nil
	}
	switch t.Kind() {
	case reflect.Struct:
		return pl.structPlan(t)
	case reflect.Array:
		return pl.arrayPlan(t)
	case reflect.Slice:
		return pl.slicePlan(t)
	case reflect.Map:
		return pl.mapPlan(t)
	case reflect.Pointer:
		return pl.pointerPlan(t)
	}
	return nil, unsupported(t, "has kind "+t.Kind().String()+", which has no encoding")
}

// leafPlan returns the plan of a type encoded by a single primitive codec,
// and its schema node.
func leafPlan(t reflect.Type) (*plan, *node) {
	if t == timeType {
		return codecPlan[time.Time](t, timeCodec{}, 2), leafNodes[kindTime]
	}
	if isMarshaler(t) {
		return &plan{
			typ: t,
			enc: func(dst []byte, p unsafe.Pointer, _ int) []byte {
				return appendMarshaled(dst, reflect.NewAt(t, p).Interface().(encoding.BinaryMarshaler))
			},
			dec: func(src []byte, p unsafe.Pointer, _ int) (int, error) {
				return decodeMarshaled(src, reflect.NewAt(t, p).Interface().(encoding.BinaryUnmarshaler))
			},
			minSize: 1,
		}, &node{kind: kindMarshaler, name: t.PkgPath() + "." + t.Name()}
	}
	switch t.Kind() {
	case reflect.Bool:
		return flatLeaf(codecPlan[bool](t, boolCodec{}, 1), flatBool), leafNodes[kindBool]
	case reflect.Int:
		return flatLeaf(codecPlan[int](t, intCodec[int]{}, 1), flatInt), leafNodes[intKind(t)]
	case reflect.Int8:
		return flatLeaf(codecPlan[int8](t, intCodec[int8]{}, 1), flatInt8), leafNodes[kindInt8]
	case reflect.Int16:
		return flatLeaf(codecPlan[int16](t, intCodec[int16]{}, 1), flatInt16), leafNodes[kindInt16]
	case reflect.Int32:
		return flatLeaf(codecPlan[int32](t, intCodec[int32]{}, 1), flatInt32), leafNodes[kindInt32]
	case reflect.Int64:
		return flatLeaf(codecPlan[int64](t, intCodec[int64]{}, 1), flatInt64), leafNodes[kindInt64]
	case reflect.Uint:
		return flatLeaf(codecPlan[uint](t, uintCodec[uint]{}, 1), flatUint), leafNodes[uintKind(t)]
	case reflect.Uint8:
		return flatLeaf(codecPlan[uint8](t, uintCodec[uint8]{}, 1), flatUint8), leafNodes[kindUint8]
	case reflect.Uint16:
		return flatLeaf(codecPlan[uint16](t, uintCodec[uint16]{}, 1), flatUint16), leafNodes[kindUint16]
	case reflect.Uint32:
		return flatLeaf(codecPlan[uint32](t, uintCodec[uint32]{}, 1), flatUint32), leafNodes[kindUint32]
	case reflect.Uint64:
		return flatLeaf(codecPlan[uint64](t, uintCodec[uint64]{}, 1), flatUint64), leafNodes[kindUint64]
	case reflect.Float32:
		return flatLeaf(codecPlan[float32](t, float32Codec{}, 4), flatFloat32), leafNodes[kindFloat32]
	case reflect.Float64:
		return flatLeaf(codecPlan[float64](t, float64Codec{}, 8), flatFloat64), leafNodes[kindFloat64]
	case reflect.String:
		return codecPlan[string](t, stringCodec{}, 1), leafNodes[kindString]
	case reflect.Slice:
		if e := t.Elem(); e.Kind() == reflect.Uint8 && !isMarshaler(e) {
			return codecPlan[[]byte](t, bytesCodec{}, 1), leafNodes[kindBytes]
		}
	}
	return nil, nil
}

// codecPlan runs codec c of U on values of t, whose memory layout is U's.
func codecPlan[U any](t reflect.Type, c Codec[U], minSize int) *plan {
	return &plan{
		typ: t,
		enc: func(dst []byte, p unsafe.Pointer, _ int) []byte { return c.Append(dst, *(*U)(p)) },
		dec: func(src []byte, p unsafe.Pointer, _ int) (int, error) {
			v, n, err := c.Decode(src)
			if err != nil {
				return 0, err
			}
			*(*U)(p) = v
			return n, nil
		},
		minSize: minSize,
	}
}

// intKind and uintKind name int and uint by their size on this platform:
// the varint bytes of an int are those of an int64 (or int32), and a
// schema describes bytes, not Go spellings.
func intKind(t reflect.Type) kind {
	if t.Size() == 4 {
		return kindInt32
	}
	return kindInt64
}

func uintKind(t reflect.Type) kind {
	if t.Size() == 4 {
		return kindUint32
	}
	return kindUint64
}

// fieldPlan is what the encoder and decoder of a struct loop over; it is
// kept to two words because they do so for every value.
type fieldPlan struct {
	off  uintptr
	plan *plan
}

// structField is a field as Resolve needs it.
type structField struct {
	fieldPlan
	// name is the field's identity in schemas: a rename that keeps it
	// (through the weir tag) keeps the field's state.
	name string
	// goName is the Go field name, for messages.
	goName string
}

// structPlan encodes the fields in declaration order, back to back.
func (pl *planner) structPlan(t reflect.Type) (*plan, error) {
	// Registered before the fields are built, so that a field reaching back
	// to t (type Node struct{ Next *Node }) finds this plan and its schema
	// node: one node per type, and recursion becomes a cycle in the schema.
	sn := &node{kind: kindStruct, name: structName(t)}
	p := &plan{typ: t}
	side := pl.add(t, p, sn)
	named, err := pl.structFields(t)
	if err != nil {
		pl.forget(t, p)
		return nil, err
	}
	side.fields = named
	fields := make([]fieldPlan, len(named))
	for i, f := range named {
		fields[i] = f.fieldPlan
		sn.fields = append(sn.fields, field{name: f.name, typ: pl.schema(f.plan)})
		p.minSize += f.plan.minSize
	}
	p.dec = structDec(fields)
	if flat := flatFields(fields); flat != nil {
		p.enc, p.flat = flatEnc(flat), flat
		return p, nil
	}
	p.enc = func(dst []byte, p unsafe.Pointer, depth int) []byte {
		for _, f := range fields {
			dst = f.plan.enc(dst, unsafe.Add(p, f.off), depth)
		}
		return dst
	}
	return p, nil
}

// structDec decodes the fields in declaration order.
func structDec(fields []fieldPlan) func(src []byte, p unsafe.Pointer, depth int) (int, error) {
	return func(src []byte, p unsafe.Pointer, depth int) (int, error) {
		n := 0
		for _, f := range fields {
			m, err := f.plan.dec(src[n:], unsafe.Add(p, f.off), depth)
			if err != nil {
				return 0, err
			}
			n += m
		}
		return n, nil
	}
}

// arrayPlan encodes the elements back to back; the length is in the type.
func (pl *planner) arrayPlan(t reflect.Type) (*plan, error) {
	ep, err := pl.build(t.Elem())
	if err != nil {
		return nil, err
	}
	n, size := uintptr(t.Len()), t.Elem().Size()
	p := &plan{
		typ: t,
		enc: func(dst []byte, p unsafe.Pointer, depth int) []byte {
			for i := range n {
				dst = ep.enc(dst, unsafe.Add(p, i*size), depth)
			}
			return dst
		},
		dec: func(src []byte, p unsafe.Pointer, depth int) (int, error) {
			read := 0
			for i := range n {
				m, err := ep.dec(src[read:], unsafe.Add(p, i*size), depth)
				if err != nil {
					return 0, err
				}
				read += m
			}
			return read, nil
		},
		minSize: t.Len() * ep.minSize,
	}
	pl.add(t, p, &node{kind: kindArray, length: t.Len(), elem: pl.schema(ep)})
	return p, nil
}

// maxZeroSizeCount bounds counts of elements that encode to zero bytes
// (struct{}), which the remaining input cannot bound.
const maxZeroSizeCount = 1 << 20

// readCount reads a nil-or-count header (0 = nil, n+1 = n elements) and
// checks n against the remaining input.
func readCount(src []byte, minElem int, what string) (count int, isNil bool, n int, err error) {
	c, n, err := uvarint(src)
	if err != nil {
		return 0, false, 0, corrupt("%s length: %v", what, err)
	}
	if c == 0 {
		return 0, true, n, nil
	}
	c--
	limit := uint64(maxZeroSizeCount)
	if minElem > 0 {
		limit = uint64((len(src) - n) / minElem)
	}
	if c > limit {
		return 0, false, 0, corrupt("%s length %d exceeds what the %d bytes left can hold", what, c, len(src)-n)
	}
	return int(c), false, n, nil
}

// deeper counts one more level of nesting while encoding. Append has no
// error result, so a value nesting deeper than maxDepth (a pointer cycle)
// panics with a message saying so, rather than overflowing the stack.
func deeper(t reflect.Type, depth int) int {
	if depth >= maxDepth {
		panic(fmt.Sprintf("codec: encode %s: value nests deeper than %d levels; break the pointer cycle", t, maxDepth))
	}
	return depth + 1
}

func tooDeep(t reflect.Type) error {
	return corrupt("%s nests deeper than %d levels", t, maxDepth)
}

// slicePlan writes a nil-or-count header, then the elements.
func (pl *planner) slicePlan(t reflect.Type) (*plan, error) {
	sn := &node{kind: kindSlice}
	p := &plan{typ: t, minSize: 1}
	pl.add(t, p, sn) // before the element: a slice may contain itself
	ep, err := pl.build(t.Elem())
	if err != nil {
		pl.forget(t, p)
		return nil, err
	}
	sn.elem = pl.schema(ep)
	size := t.Elem().Size()
	p.enc = func(dst []byte, p unsafe.Pointer, depth int) []byte {
		depth = deeper(t, depth)
		v := reflect.NewAt(t, p).Elem()
		if v.IsNil() {
			return append(dst, 0)
		}
		n := v.Len()
		dst = binary.AppendUvarint(dst, uint64(n)+1)
		base := v.UnsafePointer()
		for i := range uintptr(n) {
			dst = ep.enc(dst, unsafe.Add(base, i*size), depth)
		}
		return dst
	}
	p.dec = func(src []byte, p unsafe.Pointer, depth int) (int, error) {
		if depth >= maxDepth {
			return 0, tooDeep(t)
		}
		count, isNil, read, err := readCount(src, ep.minSize, t.String())
		if err != nil {
			return 0, err
		}
		v := reflect.NewAt(t, p).Elem()
		if isNil {
			v.SetZero()
			return read, nil
		}
		s := reflect.MakeSlice(t, count, count)
		base := s.UnsafePointer()
		for i := range uintptr(count) {
			m, err := ep.dec(src[read:], unsafe.Add(base, i*size), depth+1)
			if err != nil {
				return 0, err
			}
			read += m
		}
		v.Set(s)
		return read, nil
	}
	return p, nil
}

// mapPlan writes a nil-or-count header, then key-value pairs in the order of
// the keys' encodings, so equal maps encode to equal bytes.
func (pl *planner) mapPlan(t reflect.Type) (*plan, error) {
	sn := &node{kind: kindMap}
	p := &plan{typ: t, minSize: 1}
	pl.add(t, p, sn)
	kp, err := pl.build(t.Key())
	if err != nil {
		pl.forget(t, p)
		return nil, err
	}
	vp, err := pl.build(t.Elem())
	if err != nil {
		pl.forget(t, p)
		return nil, err
	}
	sn.key, sn.elem = pl.schema(kp), pl.schema(vp)
	kt, vt := t.Key(), t.Elem()
	p.enc = func(dst []byte, p unsafe.Pointer, depth int) []byte {
		depth = deeper(t, depth)
		m := reflect.NewAt(t, p).Elem()
		if m.IsNil() {
			return append(dst, 0)
		}
		dst = binary.AppendUvarint(dst, uint64(m.Len())+1)
		// Encode every pair into scratch, then copy them out sorted by key.
		type span struct{ start, keyEnd, end int }
		var scratch []byte
		spans := make([]span, 0, m.Len())
		k, v := reflect.New(kt), reflect.New(vt)
		for it := m.MapRange(); it.Next(); {
			k.Elem().SetIterKey(it)
			v.Elem().SetIterValue(it)
			start := len(scratch)
			scratch = kp.enc(scratch, k.UnsafePointer(), depth)
			keyEnd := len(scratch)
			scratch = vp.enc(scratch, v.UnsafePointer(), depth)
			spans = append(spans, span{start, keyEnd, len(scratch)})
		}
		slices.SortFunc(spans, func(a, b span) int {
			return bytes.Compare(scratch[a.start:a.keyEnd], scratch[b.start:b.keyEnd])
		})
		for _, s := range spans {
			dst = append(dst, scratch[s.start:s.end]...)
		}
		return dst
	}
	p.dec = func(src []byte, p unsafe.Pointer, depth int) (int, error) {
		if depth >= maxDepth {
			return 0, tooDeep(t)
		}
		count, isNil, read, err := readCount(src, kp.minSize+vp.minSize, t.String())
		if err != nil {
			return 0, err
		}
		out := reflect.NewAt(t, p).Elem()
		if isNil {
			out.SetZero()
			return read, nil
		}
		m := reflect.MakeMapWithSize(t, count)
		k, v := reflect.New(kt), reflect.New(vt)
		for i := range count {
			k.Elem().SetZero()
			v.Elem().SetZero()
			n, err := kp.dec(src[read:], k.UnsafePointer(), depth+1)
			if err != nil {
				return 0, err
			}
			read += n
			if n, err = vp.dec(src[read:], v.UnsafePointer(), depth+1); err != nil {
				return 0, err
			}
			read += n
			m.SetMapIndex(k.Elem(), v.Elem())
			if m.Len() != i+1 {
				return 0, corrupt("%s: duplicate key", t)
			}
		}
		out.Set(m)
		return read, nil
	}
	return p, nil
}

// pointerPlan writes 0 for nil, or 1 followed by the pointee.
func (pl *planner) pointerPlan(t reflect.Type) (*plan, error) {
	sn := &node{kind: kindPointer}
	p := &plan{typ: t, minSize: 1}
	pl.add(t, p, sn)
	ep, err := pl.build(t.Elem())
	if err != nil {
		pl.forget(t, p)
		return nil, err
	}
	sn.elem = pl.schema(ep)
	et := t.Elem()
	p.enc = func(dst []byte, p unsafe.Pointer, depth int) []byte {
		depth = deeper(t, depth)
		ptr := *(*unsafe.Pointer)(p)
		if ptr == nil {
			return append(dst, 0)
		}
		return ep.enc(append(dst, 1), ptr, depth)
	}
	p.dec = func(src []byte, p unsafe.Pointer, depth int) (int, error) {
		if depth >= maxDepth {
			return 0, tooDeep(t)
		}
		if len(src) == 0 {
			return 0, corrupt("%s: no input", t)
		}
		out := reflect.NewAt(t, p).Elem()
		switch src[0] {
		case 0:
			out.SetZero()
			return 1, nil
		case 1:
			nv := reflect.New(et)
			n, err := ep.dec(src[1:], nv.UnsafePointer(), depth+1)
			if err != nil {
				return 0, err
			}
			out.Set(nv)
			return 1 + n, nil
		}
		return 0, corrupt("%s: presence byte %#x is neither 0 nor 1", t, src[0])
	}
	return p, nil
}
