package state

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/weirstream/weir/internal/codec"
)

// Migration converts restored values written as an older type into the
// state's type, for the changes codec.Resolve cannot make on its own (a
// field's kind changed, a value computed from others). It is given at
// registration with WithMigration; NewMigration makes one.
type Migration interface {
	// types names the conversion, for errors.
	types() (old, now reflect.Type)
}

// migrationTo is a Migration producing V: the registration of a V state
// finds its migrations by asserting this.
type migrationTo[V any] interface {
	Migration
	// decoderFrom returns a decoder of V from bytes written under w, or
	// the error of resolving w against the migration's old type.
	decoderFrom(w codec.Schema) (codec.Decoder[V], error)
}

// NewMigration returns the Migration that reads restored values as Old
// and converts each with f. Old is the state's former type, kept in the
// program under another Go name (struct names are not part of a schema).
func NewMigration[Old, New any](f func(Old) (New, error)) Migration {
	return migration[Old, New]{f: f}
}

type migration[Old, New any] struct{ f func(Old) (New, error) }

func (m migration[Old, New]) types() (reflect.Type, reflect.Type) {
	return reflect.TypeFor[Old](), reflect.TypeFor[New]()
}

func (m migration[Old, New]) decoderFrom(w codec.Schema) (codec.Decoder[New], error) {
	dec, _, err := codec.Resolve[Old](w)
	if err != nil {
		return nil, err
	}
	return migratingDecoder[Old, New]{dec: dec, f: m.f}, nil
}

type migratingDecoder[Old, New any] struct {
	dec codec.Decoder[Old]
	f   func(Old) (New, error)
}

func (d migratingDecoder[Old, New]) Decode(src []byte) (New, int, error) {
	var zero New
	old, n, err := d.dec.Decode(src)
	if err != nil {
		return zero, 0, err
	}
	v, err := d.f(old)
	if err != nil {
		return zero, 0, &MigrationError{Old: reflect.TypeFor[Old](), New: reflect.TypeFor[New](), Value: old, Err: err}
	}
	return v, n, nil
}

// ErrMigration is matched (errors.Is) by a MigrationError.
var ErrMigration = errors.New("state migration failed")

// MigrationError is a migration function's error for one restored value.
// A restart would meet the same value: it fails the restore for good.
type MigrationError struct {
	Old, New reflect.Type
	Value    any // the old value
	Err      error
}

func (e *MigrationError) Error() string {
	return fmt.Sprintf("migration from %s to %s failed for %+v: %v", e.Old, e.New, e.Value, e.Err)
}

func (e *MigrationError) Unwrap() []error { return []error{ErrMigration, e.Err} }

// WithMigration gives the state a migration: restored values whose schema
// the state's own type cannot read as they are, but m's old type can, are
// converted with it. Several may be given (one per older type); the first
// whose old type reads the stored schema is used.
func WithMigration(m Migration) RegisterOption {
	return func(o *registerOptions) { o.migrations = append(o.migrations, m) }
}

// migrationsTo picks the migrations that produce V, and fails for those
// that produce another type: a migration that could never apply is a bug
// in the program, better reported at once than when a restore needs it.
func migrationsTo[V any](migs []Migration, what string) ([]migrationTo[V], error) {
	var out []migrationTo[V]
	for _, m := range migs {
		mv, ok := m.(migrationTo[V])
		if !ok {
			old, now := m.types()
			return nil, fmt.Errorf("register %s: its migration converts %s to %s, but the state holds %s: convert to the state's type", what, old, now, reflect.TypeFor[V]())
		}
		out = append(out, mv)
	}
	return out, nil
}
