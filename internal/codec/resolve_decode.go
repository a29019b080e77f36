package codec

import (
	"reflect"
	"unsafe"
)

// The converting decoders of a resolution (resolve.go). Each mirrors the
// plan decoder of its kind in plan.go, with the writer's schema deciding
// the counts' bounds and the children, so that converting costs no
// allocation the reader's own decoder would not make: struct fields are
// decoded in place, dropped ones skipped without decoding them.

// decoder returns the decoder of pair p: the reader's own where nothing
// below p converts. A pair whose decoder is being built (a cycle) is
// called through the holder that will hold it.
func (r *resolver) decoder(p *pair) decFn {
	if !p.convert {
		return p.r.dec
	}
	if p.dec != nil {
		if *p.dec != nil {
			return *p.dec
		}
		h := p.dec
		return func(src []byte, ptr unsafe.Pointer, depth int) (int, error) { return (*h)(src, ptr, depth) }
	}
	p.dec = new(decFn)
	*p.dec = r.build(p)
	return *p.dec
}

func (r *resolver) build(p *pair) decFn {
	switch p.how {
	case howFloatWiden:
		return func(src []byte, ptr unsafe.Pointer, _ int) (int, error) {
			v, n, err := float32Codec{}.Decode(src)
			if err != nil {
				return 0, err
			}
			*(*float64)(ptr) = float64(v)
			return n, nil
		}
	case howStruct:
		return r.structDecoder(p)
	case howArray:
		return r.arrayDecoder(p)
	case howSlice:
		return r.sliceDecoder(p)
	case howMap:
		return r.mapDecoder(p)
	case howPointer:
		return r.pointerDecoder(p)
	case howAddPointer:
		return r.addPointerDecoder(p)
	case howDropPointer:
		return r.dropPointerDecoder(p)
	}
	panic("codec: converting decoder for a pair that reads as is") // propagate marks only the above
}

// structStep reads one writer field into the reader's field at off; dec
// of a field the reader dropped skips it, ignoring the pointer.
type structStep struct {
	off uintptr
	dec decFn
}

func (r *resolver) structDecoder(p *pair) decFn {
	steps := make([]structStep, len(p.w.fields))
	for i, wf := range p.w.fields {
		c := p.fieldOf[i]
		if c < 0 {
			skip := r.walker.skipper(wf.typ)
			steps[i] = structStep{dec: func(src []byte, _ unsafe.Pointer, depth int) (int, error) { return skip(src, depth) }}
			continue
		}
		child := p.children[c]
		steps[i] = structStep{off: p.offsets[c], dec: r.decoder(child)}
	}
	// Fields the writer did not have are not touched: they keep the zero
	// value the destination holds.
	return func(src []byte, ptr unsafe.Pointer, depth int) (int, error) {
		read := 0
		for i := range steps {
			s := &steps[i]
			m, err := s.dec(src[read:], unsafe.Add(ptr, s.off), depth)
			if err != nil {
				return 0, err
			}
			read += m
		}
		return read, nil
	}
}

func (r *resolver) arrayDecoder(p *pair) decFn {
	elem := r.decoder(p.children[0])
	n, size := uintptr(p.r.typ.Len()), p.r.typ.Elem().Size()
	return func(src []byte, ptr unsafe.Pointer, depth int) (int, error) {
		read := 0
		for i := range n {
			m, err := elem(src[read:], unsafe.Add(ptr, i*size), depth)
			if err != nil {
				return 0, err
			}
			read += m
		}
		return read, nil
	}
}

func (r *resolver) sliceDecoder(p *pair) decFn {
	t := p.r.typ
	elem, minElem, size := r.decoder(p.children[0]), r.walker.minSize(p.w.elem), t.Elem().Size()
	return func(src []byte, ptr unsafe.Pointer, depth int) (int, error) {
		if depth >= maxDepth {
			return 0, tooDeep(t)
		}
		count, isNil, read, err := readCount(src, minElem, t.String())
		if err != nil {
			return 0, err
		}
		v := reflect.NewAt(t, ptr).Elem()
		if isNil {
			v.SetZero()
			return read, nil
		}
		s := reflect.MakeSlice(t, count, count)
		base := s.UnsafePointer()
		for i := range uintptr(count) {
			m, err := elem(src[read:], unsafe.Add(base, i*size), depth+1)
			if err != nil {
				return 0, err
			}
			read += m
		}
		v.Set(s)
		return read, nil
	}
}

func (r *resolver) mapDecoder(p *pair) decFn {
	t := p.r.typ
	kd, vd := r.decoder(p.children[0]), r.decoder(p.children[1])
	minPair := r.walker.minSize(p.w.key) + r.walker.minSize(p.w.elem)
	kt, vt := t.Key(), t.Elem()
	return func(src []byte, ptr unsafe.Pointer, depth int) (int, error) {
		if depth >= maxDepth {
			return 0, tooDeep(t)
		}
		count, isNil, read, err := readCount(src, minPair, t.String())
		if err != nil {
			return 0, err
		}
		out := reflect.NewAt(t, ptr).Elem()
		if isNil {
			out.SetZero()
			return read, nil
		}
		m := reflect.MakeMapWithSize(t, count)
		k, v := reflect.New(kt), reflect.New(vt)
		for i := range count {
			k.Elem().SetZero()
			v.Elem().SetZero()
			n, err := kd(src[read:], k.UnsafePointer(), depth+1)
			if err != nil {
				return 0, err
			}
			read += n
			if n, err = vd(src[read:], v.UnsafePointer(), depth+1); err != nil {
				return 0, err
			}
			read += n
			m.SetMapIndex(k.Elem(), v.Elem())
			if m.Len() != i+1 {
				// Key conversions are one-to-one (Resolve refuses the
				// others), so two equal keys were in the bytes.
				return 0, corrupt("%s: duplicate key", t)
			}
		}
		out.Set(m)
		return read, nil
	}
}

func (r *resolver) pointerDecoder(p *pair) decFn {
	t := p.r.typ
	elem, et := r.decoder(p.children[0]), t.Elem()
	return func(src []byte, ptr unsafe.Pointer, depth int) (int, error) {
		if depth >= maxDepth {
			return 0, tooDeep(t)
		}
		present, err := presence(src, t.String())
		if err != nil {
			return 0, err
		}
		out := reflect.NewAt(t, ptr).Elem()
		if !present {
			out.SetZero()
			return 1, nil
		}
		nv := reflect.New(et)
		n, err := elem(src[1:], nv.UnsafePointer(), depth+1)
		if err != nil {
			return 0, err
		}
		out.Set(nv)
		return 1 + n, nil
	}
}

// addPointerDecoder reads a T (never absent) into a new *T.
func (r *resolver) addPointerDecoder(p *pair) decFn {
	t := p.r.typ
	elem, et := r.decoder(p.children[0]), t.Elem()
	return func(src []byte, ptr unsafe.Pointer, depth int) (int, error) {
		if depth >= maxDepth {
			return 0, tooDeep(t)
		}
		nv := reflect.New(et)
		n, err := elem(src, nv.UnsafePointer(), depth+1)
		if err != nil {
			return 0, err
		}
		reflect.NewAt(t, ptr).Elem().Set(nv)
		return n, nil
	}
}

// dropPointerDecoder reads a *T into a T: nil becomes T's zero value.
func (r *resolver) dropPointerDecoder(p *pair) decFn {
	t := p.r.typ
	elem := r.decoder(p.children[0])
	return func(src []byte, ptr unsafe.Pointer, depth int) (int, error) {
		if depth >= maxDepth {
			return 0, tooDeep(t)
		}
		present, err := presence(src, "*"+t.String())
		if err != nil {
			return 0, err
		}
		if !present {
			reflect.NewAt(t, ptr).Elem().SetZero()
			return 1, nil
		}
		n, err := elem(src[1:], ptr, depth+1)
		if err != nil {
			return 0, err
		}
		return 1 + n, nil
	}
}
