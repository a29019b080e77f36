package codec

import "unsafe"

// Walking bytes by a writer's schema alone, with no Go type to decode
// into: how a field the reader dropped is stepped over. The skippers check
// what they pass (a bool is 0 or 1, a varint fits its width, a count fits
// the input), as decoders do, so corrupt bytes fail here too rather than
// shifting every field after them.

// decFn is a plan's decoder: one value from the front of src into *p.
type decFn = func(src []byte, p unsafe.Pointer, depth int) (int, error)

// skipFn steps over one value at the front of src and returns its length.
type skipFn = func(src []byte, depth int) (int, error)

// schemaWalker computes, per node of a writer's schema, the least bytes a
// value takes and a function that skips one value. Both are memoized per
// node, so shared and recursive nodes cost once.
type schemaWalker struct {
	mins  map[*node]int
	skips map[*node]*skipFn
}

func newSchemaWalker() *schemaWalker {
	return &schemaWalker{mins: map[*node]int{}, skips: map[*node]*skipFn{}}
}

// minSizeCap keeps minSize's products and sums from overflowing; any value
// this large exceeds every input, which is all minSize is compared with.
const minSizeCap = 1 << 40

// minSize is the fewest bytes a value of n encodes to: counts read from
// the input are checked against remaining/minSize, as plans do. Structs
// and arrays recurse; DecodeSchema has ruled out their cycles, and every
// other composite is at least one byte without looking further.
func (w *schemaWalker) minSize(n *node) int {
	if m, ok := w.mins[n]; ok {
		return m
	}
	m := 1
	switch n.kind {
	case kindFloat32:
		m = 4
	case kindFloat64:
		m = 8
	case kindStruct:
		m = 0
		for _, f := range n.fields {
			m = min(m+w.minSize(f.typ), minSizeCap)
		}
	case kindArray:
		m = 0
		if e := w.minSize(n.elem); e > 0 && n.length > 0 {
			m = min(n.length, minSizeCap/e) * e
		}
	}
	w.mins[n] = m
	return m
}

// skipper returns the function that skips a value of n. For a node whose
// skipper is still being built (a cycle), it returns one that calls
// through the holder being filled.
func (w *schemaWalker) skipper(n *node) skipFn {
	if h, ok := w.skips[n]; ok {
		if *h != nil {
			return *h
		}
		return func(src []byte, depth int) (int, error) { return (*h)(src, depth) }
	}
	h := new(skipFn)
	w.skips[n] = h
	if w.minSize(n) == 0 {
		// Only structs and arrays of such take no bytes at all, and then
		// every value of them takes none: walking one would cost nothing
		// but time, exponential in the schema for struct types shared
		// through back-references (struct{A, B S} with S likewise).
		*h = func([]byte, int) (int, error) { return 0, nil }
		return *h
	}
	*h = w.buildSkipper(n)
	return *h
}

func (w *schemaWalker) buildSkipper(n *node) skipFn {
	switch n.kind {
	case kindBool:
		return skipWith(boolCodec{})
	case kindInt8:
		return skipWith(intCodec[int8]{})
	case kindInt16:
		return skipWith(intCodec[int16]{})
	case kindInt32:
		return skipWith(intCodec[int32]{})
	case kindInt64:
		return skipWith(intCodec[int64]{})
	case kindUint8:
		return skipWith(uintCodec[uint8]{})
	case kindUint16:
		return skipWith(uintCodec[uint16]{})
	case kindUint32:
		return skipWith(uintCodec[uint32]{})
	case kindUint64:
		return skipWith(uintCodec[uint64]{})
	case kindFloat32:
		return skipWith(float32Codec{})
	case kindFloat64:
		return skipWith(float64Codec{})
	case kindString, kindTime, kindMarshaler:
		what := kindNames[n.kind]
		return func(src []byte, _ int) (int, error) {
			_, m, err := lengthPrefixed(src, what)
			return m, err
		}
	case kindBytes:
		return func(src []byte, _ int) (int, error) {
			count, _, m, err := readCount(src, 1, "[]byte")
			return m + count, err
		}
	case kindStruct:
		return w.structSkipper(n)
	case kindArray:
		return w.arraySkipper(n)
	case kindSlice:
		return w.sliceSkipper(n)
	case kindMap:
		return w.mapSkipper(n)
	case kindPointer:
		return w.pointerSkipper(n)
	}
	panic("codec: skipper for node kind " + kindNames[n.kind]) // DecodeSchema admits no other kind
}

// skipWith skips by decoding with a leaf codec that does not allocate.
func skipWith[T any](c Codec[T]) skipFn {
	return func(src []byte, _ int) (int, error) {
		_, m, err := c.Decode(src)
		return m, err
	}
}

func (w *schemaWalker) structSkipper(n *node) skipFn {
	fields := make([]skipFn, len(n.fields))
	for i, f := range n.fields {
		fields[i] = w.skipper(f.typ)
	}
	return func(src []byte, depth int) (int, error) {
		read := 0
		for _, skip := range fields {
			m, err := skip(src[read:], depth)
			if err != nil {
				return 0, err
			}
			read += m
		}
		return read, nil
	}
}

func (w *schemaWalker) arraySkipper(n *node) skipFn {
	if w.minSize(n.elem) == 0 || n.length == 0 {
		// Every value of the element is zero bytes long (struct{}): skip
		// the whole array at once, however long the schema says it is.
		return func([]byte, int) (int, error) { return 0, nil }
	}
	elem, length, min := w.skipper(n.elem), n.length, w.minSize(n)
	return func(src []byte, depth int) (int, error) {
		if len(src) < min {
			return 0, corrupt("array of %d: %d bytes left, need at least %d", length, len(src), min)
		}
		read := 0
		for range length {
			m, err := elem(src[read:], depth)
			if err != nil {
				return 0, err
			}
			read += m
		}
		return read, nil
	}
}

func (w *schemaWalker) sliceSkipper(n *node) skipFn {
	elem, min := w.skipper(n.elem), w.minSize(n.elem)
	return func(src []byte, depth int) (int, error) {
		if depth >= maxDepth {
			return 0, corrupt("slice nests deeper than %d levels", maxDepth)
		}
		count, _, read, err := readCount(src, min, "slice")
		if err != nil || min == 0 {
			// Elements of zero bytes (struct{}) need no stepping over.
			return read, err
		}
		for range count {
			m, err := elem(src[read:], depth+1)
			if err != nil {
				return 0, err
			}
			read += m
		}
		return read, nil
	}
}

func (w *schemaWalker) mapSkipper(n *node) skipFn {
	key, val, min := w.skipper(n.key), w.skipper(n.elem), w.minSize(n.key)+w.minSize(n.elem)
	return func(src []byte, depth int) (int, error) {
		if depth >= maxDepth {
			return 0, corrupt("map nests deeper than %d levels", maxDepth)
		}
		count, _, read, err := readCount(src, min, "map")
		if err != nil {
			return 0, err
		}
		for range count {
			m, err := key(src[read:], depth+1)
			if err != nil {
				return 0, err
			}
			read += m
			if m, err = val(src[read:], depth+1); err != nil {
				return 0, err
			}
			read += m
		}
		return read, nil
	}
}

func (w *schemaWalker) pointerSkipper(n *node) skipFn {
	elem := w.skipper(n.elem)
	return func(src []byte, depth int) (int, error) {
		if depth >= maxDepth {
			return 0, corrupt("pointer nests deeper than %d levels", maxDepth)
		}
		present, err := presence(src, "pointer")
		if err != nil {
			return 0, err
		}
		if !present {
			return 1, nil
		}
		m, err := elem(src[1:], depth+1)
		if err != nil {
			return 0, err
		}
		return 1 + m, nil
	}
}

// presence reads a pointer's presence byte: 0 for nil, 1 for a value.
func presence(src []byte, what string) (bool, error) {
	if len(src) == 0 {
		return false, corrupt("%s: no input", what)
	}
	switch src[0] {
	case 0:
		return false, nil
	case 1:
		return true, nil
	}
	return false, corrupt("%s: presence byte %#x is neither 0 nor 1", what, src[0])
}
