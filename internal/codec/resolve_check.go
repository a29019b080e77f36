package codec

import (
	"fmt"
	"reflect"
)

// The resolver works in two passes over pairs of (writer node, reader
// plan). check walks both types together and records, per pair, whether
// the reader's own decoder can read the writer's bytes there (local) and
// which pairs lie below; propagate marks every pair above a converting one;
// decoder then builds converting decoders only where the marks say, and
// hands every other pair the reader's own decoder, so an unchanged subtree
// decodes at full speed. Pairs are memoized, which makes recursive types
// (whose pairs form cycles) terminate.
type resolver struct {
	planner    *planner
	walker     *schemaWalker
	pairs      map[pairKey]*pair
	mismatches []Mismatch
	changes    []Change
}

func (r *resolver) change(path, what string) {
	r.changes = append(r.changes, Change{Path: path, What: what})
}

// pairKey identifies a pair. inKey is set below a map key, where changes
// that could make two keys one are refused.
type pairKey struct {
	w     *node
	r     *plan
	inKey bool
}

type pair struct {
	w *node
	r *plan
	// how converts this pair, if it must; howAsIs means the reader's
	// decoder reads the writer's bytes here.
	how conversion
	// local is set when this pair's bytes differ from the reader's, even
	// if every pair below reads as is: a float widens, a pointer comes or
	// goes, struct fields were added, dropped or moved.
	local    bool
	children []*pair // in the order the converter uses them
	parents  []*pair
	// fieldOf maps each writer field of a struct pair to its child's index
	// in children, or -1 for a field the reader dropped.
	fieldOf []int
	offsets []uintptr // of a struct's children, the reader fields' offsets
	convert bool      // local, or some pair below converts
	dec     *decFn    // the converting decoder, once decoder has built it
}

// conversion is how a pair's decoder reads the writer's bytes.
type conversion uint8

const (
	howAsIs        conversion = iota
	howFloatWiden             // float32 bytes into a float64
	howStruct                 // fields by identity; some added, dropped or moved, or converting below
	howArray                  // elements convert
	howSlice                  // elements convert
	howMap                    // keys or values convert
	howPointer                // the pointee converts
	howAddPointer             // T's bytes into a *T
	howDropPointer            // a *T's bytes into a T
)

func (r *resolver) check(w *node, rp *plan, path string, inKey bool) *pair {
	key := pairKey{w, rp, inKey}
	if p, ok := r.pairs[key]; ok {
		return p
	}
	p := &pair{w: w, r: rp}
	r.pairs[key] = p
	rn := r.planner.schema(rp)
	switch {
	case rn.kind == kindPointer && w.kind != kindPointer:
		p.how, p.local = howAddPointer, true
		r.change(path, "now a pointer: never nil after restore")
		r.child(p, w, r.plan(rp.typ.Elem()), path, inKey)
	case w.kind == kindPointer && rn.kind != kindPointer:
		if inKey {
			r.mismatch(path, w, rn, "a nil key and a key pointing to the zero value would become one key; keep the pointer")
			return p
		}
		p.how, p.local = howDropPointer, true
		r.change(path, "no longer a pointer: a stored nil restores as the zero value")
		r.child(p, w.elem, rp, path, inKey)
	case !w.kind.composite() || !rn.kind.composite():
		r.checkLeaf(p, path)
	case w.kind != rn.kind:
		r.mismatch(path, w, rn, unrelated(w, rn))
	case w.kind == kindStruct:
		r.checkStruct(p, path, inKey)
	case w.kind == kindArray:
		if w.length != rn.length {
			r.mismatch(path, w, rn, fmt.Sprintf("the array length changed from %d to %d; keep %d", w.length, rn.length, w.length))
			return p
		}
		p.how = howArray
		r.child(p, w.elem, r.plan(rp.typ.Elem()), path+"[]", inKey)
	case w.kind == kindSlice:
		p.how = howSlice
		r.child(p, w.elem, r.plan(rp.typ.Elem()), path+"[]", inKey)
	case w.kind == kindMap:
		p.how = howMap
		r.child(p, w.key, r.plan(rp.typ.Key()), path+"[key]", true)
		r.child(p, w.elem, r.plan(rp.typ.Elem()), path+"[]", inKey)
	case w.kind == kindPointer:
		p.how = howPointer
		r.child(p, w.elem, r.plan(rp.typ.Elem()), path, inKey)
	}
	return p
}

// plan returns the reader's plan for t, which building the reader's root
// plan has built: every type reachable from it is in the planner.
func (r *resolver) plan(t reflect.Type) *plan { return r.planner.done[t] }

func (r *resolver) child(p *pair, w *node, rp *plan, path string, inKey bool) {
	c := r.check(w, rp, path, inKey)
	p.children = append(p.children, c)
	c.parents = append(c.parents, p)
}

func (r *resolver) mismatch(path string, w, rn *node, why string) {
	r.mismatches = append(r.mismatches, Mismatch{Path: path, Was: describe(w), Now: describe(rn), Why: why})
}

// checkLeaf decides a pair where at least one side is a leaf.
func (r *resolver) checkLeaf(p *pair, path string) {
	w, rn := p.w, r.planner.schema(p.r)
	wk, rk := w.kind, rn.kind
	switch {
	case wk == rk && wk == kindMarshaler:
		if w.name != rn.name {
			r.mismatch(path, w, rn, "bytes written by one type's MarshalBinary are not another's to read; keep "+w.name+" (or give the new type an UnmarshalBinary that reads them and the old name)")
		}
	case wk == rk:
		// The same leaf: the same bytes.
	case wk.signedRank() > 0 && rk.signedRank() > 0:
		if wk.signedRank() > rk.signedRank() {
			r.mismatch(path, w, rn, "narrowing can lose values; keep "+kindNames[wk]+" or wider")
		} else {
			// Every signed width is the same zigzag varint: as is.
			r.change(path, "widened from "+kindNames[wk]+" to "+kindNames[rk])
		}
	case wk.unsignedRank() > 0 && rk.unsignedRank() > 0:
		if wk.unsignedRank() > rk.unsignedRank() {
			r.mismatch(path, w, rn, "narrowing can lose values; keep "+kindNames[wk]+" or wider")
		} else {
			r.change(path, "widened from "+kindNames[wk]+" to "+kindNames[rk])
		}
	case (wk.signedRank() > 0 && rk.unsignedRank() > 0) || (wk.unsignedRank() > 0 && rk.signedRank() > 0):
		r.mismatch(path, w, rn, "signed and unsigned integers are encoded differently and do not hold the same values; keep "+kindNames[wk])
	case wk == kindFloat32 && rk == kindFloat64:
		p.how, p.local = howFloatWiden, true
		r.change(path, "widened from float32 to float64")
	case wk == kindFloat64 && rk == kindFloat32:
		r.mismatch(path, w, rn, "narrowing loses precision; keep float64")
	default:
		r.mismatch(path, w, rn, unrelated(w, rn))
	}
}

// unrelated explains a mismatch of kinds that no rule converts.
func unrelated(w, rn *node) string {
	return kindNames[w.kind] + " values cannot be read as " + kindNames[rn.kind] + "; keep the old type, or add a field under a new name for the new type (the old field's state is then dropped)"
}

// checkStruct matches fields by identity, whatever their order.
func (r *resolver) checkStruct(p *pair, path string, inKey bool) {
	rn, readerFields := r.planner.schema(p.r), r.planner.fields(p.r)
	byName := make(map[string]int, len(readerFields))
	for i, f := range readerFields {
		byName[f.name] = i
	}
	// The bytes are the reader's own when the identities come in the same
	// order: nothing added, dropped or moved.
	same := len(p.w.fields) == len(readerFields)
	if p.w.name != rn.name && p.w.name != "" && rn.name != "" {
		r.change(path, "struct type renamed from "+p.w.name+" to "+rn.name)
	}
	had := make(map[string]bool, len(p.w.fields))
	for _, wf := range p.w.fields {
		had[wf.name] = true
	}
	for _, rf := range readerFields {
		if !had[rf.name] {
			r.change(path+"."+rf.goName, "added: restores as the zero value")
		}
	}
	p.fieldOf = make([]int, len(p.w.fields))
	for i, wf := range p.w.fields {
		ri, ok := byName[wf.name]
		if !ok {
			same = false
			p.fieldOf[i] = -1
			if inKey {
				r.mismatches = append(r.mismatches, Mismatch{Path: path + "." + wf.name, Was: describe(wf.typ), Now: "no such field",
					Why: "dropping a field from a map key can make two keys one; keep the field"})
			} else {
				r.change(path+"."+wf.name, "dropped: its stored values are discarded (to rename a field, keep its identity with `weir:\""+wf.name+"\"`)")
			}
			continue
		}
		same = same && ri == i
		p.fieldOf[i] = len(p.children)
		rf := readerFields[ri]
		p.offsets = append(p.offsets, rf.off)
		r.child(p, wf.typ, rf.plan, path+"."+rf.goName, inKey)
	}
	if !same && len(p.w.fields) == len(readerFields) && len(p.children) == len(readerFields) {
		r.change(path, "fields reordered")
	}
	p.how, p.local = howStruct, !same
}

// propagate marks every pair that converts, or lies above one that does:
// those need a converting decoder, all others use the reader's own.
func (r *resolver) propagate() {
	var stack []*pair
	for _, p := range r.pairs {
		if p.local {
			p.convert = true
			stack = append(stack, p)
		}
	}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, up := range p.parents {
			if !up.convert {
				up.convert = true
				stack = append(stack, up)
			}
		}
	}
}
