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
	if writer.Equal(Schema{root: pl.schema(rp)}) {
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

// migrationDecoder decodes T from bytes that need converting. Like the
// plans it is made of, it is stateless and safe for concurrent use.
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
