package codec

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unsafe"
)

// ErrIncompatible marks state that the reader's type cannot read: Resolve
// returns an *IncompatibleError wrapping it.
var ErrIncompatible = errors.New("incompatible schema")

// Compatibility is what Resolve found between the schema state was written
// with and the type that is to read it.
type Compatibility uint8

const (
	// Incompatible: the reader cannot read the writer's bytes.
	Incompatible Compatibility = iota
	// Identical: the schemas are equal (so are their fingerprints).
	Identical
	// CompatibleAsIs: the schemas differ, but not in the bytes: a struct
	// type was renamed, a field renamed through its weir tag, an integer
	// widened (varints of any width read as a wider one). The reader's
	// own codec reads the old bytes, and stored bytes need no rewrite.
	CompatibleAsIs
	// CompatibleAfterMigration: the bytes differ (fields added, dropped or
	// reordered, float32 widened, a pointer added or removed) and must be
	// read with the Decoder Resolve returns, then written anew with the
	// reader's codec.
	CompatibleAfterMigration
)

func (c Compatibility) String() string {
	switch c {
	case Identical:
		return "identical"
	case CompatibleAsIs:
		return "compatible as is"
	case CompatibleAfterMigration:
		return "compatible after migration"
	}
	return "incompatible"
}

// Decoder decodes values of T, from bytes written under some schema.
type Decoder[T any] interface {
	// Decode decodes one value from the front of src and returns it with
	// the number of bytes consumed. Bad bytes give an error wrapping
	// ErrCorrupt.
	Decode(src []byte) (v T, n int, err error)
}

// Resolve decides whether bytes written under the writer's schema can be
// read as T, and returns the decoder that does it: T's own codec when the
// bytes are T's (Identical, CompatibleAsIs), or one that converts while it
// decodes (CompatibleAfterMigration; it also implements DecodeInto as
// PointerCodec does). When T cannot read them the error is an
// *IncompatibleError, wrapping ErrIncompatible, naming every field that
// differs; when T has no codec it wraps ErrUnsupported, as For's does.
func Resolve[T any](writer Schema) (Decoder[T], Compatibility, error) {
	c, r, root, compat, err := resolve[T](writer)
	switch compat {
	case Identical, CompatibleAsIs:
		return c, compat, nil
	case CompatibleAfterMigration:
		return &migrationDecoder[T]{dec: r.decoder(root)}, compat, nil
	}
	return nil, Incompatible, err
}

// Changes lists what differs between the writer's schema and T, for a
// savepoint check to show before a restore: fields added and dropped (a
// field renamed without a weir tag shows as both, and its state is lost),
// moved, widened, pointers added and removed, struct types renamed. A type
// reached along several paths is reported along the first. The error is
// Resolve's.
func Changes[T any](writer Schema) ([]Change, error) {
	_, r, _, _, err := resolve[T](writer)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, nil // identical
	}
	return r.changes, nil
}

// A Change is one difference Resolve can read across.
type Change struct {
	Path string // from the reader's type, by Go field names: Total.Max
	What string // added: restores as the zero value
}

func (c Change) String() string { return c.Path + ": " + c.What }

// resolve runs Resolve's checks. The resolver is nil when the schemas
// are identical.
func resolve[T any](writer Schema) (Codec[T], *resolver, *pair, Compatibility, error) {
	t := reflect.TypeFor[T]()
	if writer.root == nil {
		return nil, nil, nil, Incompatible, fmt.Errorf("resolve %s: no writer schema (a zero Schema)", t)
	}
	c, err := For[T]()
	if err != nil {
		return nil, nil, nil, Incompatible, err
	}
	pl := newPlanner()
	rp, err := pl.build(t)
	if err != nil {
		return nil, nil, nil, Incompatible, fmt.Errorf("resolve %s: %w", t, err) // For just built it
	}
	if writer.Equal(Schema{root: rp.schema}) {
		return c, nil, nil, Identical, nil
	}
	r := &resolver{planner: pl, pairs: map[pairKey]*pair{}, walker: newSchemaWalker()}
	root := r.check(writer.root, rp, rootPath(t), false)
	if len(r.mismatches) > 0 {
		return nil, r, root, Incompatible, &IncompatibleError{Type: t.String(), Mismatches: r.mismatches}
	}
	r.propagate()
	if !root.convert {
		return c, r, root, CompatibleAsIs, nil
	}
	return c, r, root, CompatibleAfterMigration, nil
}

func rootPath(t reflect.Type) string {
	if t.Name() != "" {
		return t.Name()
	}
	return t.String()
}

// A Mismatch is one place where the writer's bytes cannot be read as the
// reader's type.
type Mismatch struct {
	Path string // from the reader's type, by Go field names: Total.Stats[].Count
	Was  string // the writer's type there, as its schema describes it: int64
	Now  string // the reader's type there: string
	Why  string // why not, and what to do instead
}

func (m Mismatch) String() string {
	return fmt.Sprintf("%s: was %s, now %s: %s", m.Path, m.Was, m.Now, m.Why)
}

// IncompatibleError lists every Mismatch Resolve found. It wraps
// ErrIncompatible.
type IncompatibleError struct {
	Type       string // the reader's Go type
	Mismatches []Mismatch
}

// maxMismatchesShown bounds Error's length; Mismatches keeps them all.
const maxMismatchesShown = 10

func (e *IncompatibleError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "state cannot be read as %s: ", e.Type)
	for i, m := range e.Mismatches {
		if i == maxMismatchesShown {
			fmt.Fprintf(&b, "; and %d more", len(e.Mismatches)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(m.String())
	}
	b.WriteString(": ")
	b.WriteString(ErrIncompatible.Error())
	return b.String()
}

func (e *IncompatibleError) Unwrap() error { return ErrIncompatible }

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
	rn := rp.schema
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
	w, rn := p.w, p.r.schema
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
	readerFields := p.r.fields
	byName := make(map[string]int, len(readerFields))
	for i, f := range readerFields {
		byName[f.name] = i
	}
	// The bytes are the reader's own when the identities come in the same
	// order: nothing added, dropped or moved.
	same := len(p.w.fields) == len(readerFields)
	if p.w.name != p.r.schema.name && p.w.name != "" && p.r.schema.name != "" {
		r.change(path, "struct type renamed from "+p.w.name+" to "+p.r.schema.name)
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

// migrationDecoder decodes T from bytes that need converting.
type migrationDecoder[T any] struct{ dec decFn }

func (m *migrationDecoder[T]) Decode(src []byte) (v T, n int, err error) {
	n, err = m.dec(src, unsafe.Pointer(&v), 0)
	if err != nil {
		var zero T
		return zero, 0, err
	}
	return v, n, nil
}

// DecodeInto is Decode into *v, which must hold T's zero value: fields the
// writer did not have are left as they are.
func (m *migrationDecoder[T]) DecodeInto(src []byte, v *T) (int, error) {
	return m.dec(src, unsafe.Pointer(v), 0)
}
