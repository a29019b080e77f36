package state

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/keygroup"
)

// State evolution (docs/compatibility.md): a checkpoint records, per state,
// the schema of its key and value types (checkpoint.StateSchema, one row
// per state in the metadata's state table). A restore hands the rows to the
// backend (SetRestoredSchemas) before it registers states, and each
// registration resolves the stored value schema against the program's type
// (codec.Resolve): bytes the program's codec reads as they are restore as
// before; bytes that differ (a field added, dropped or moved, a float
// widened) are decoded by the resolved decoder and converted once, at
// restore, so that a store never holds two encodings of a state; anything
// else fails the registration with an error naming the state, the field and
// both types. A checkpoint without a table (written before schemas were
// recorded) restores as before, with the program's codecs.

// SchemaTable is the schema bookkeeping of a backend; the heap backend,
// the LSM backend and the operator backend embed one. It is used from the
// task goroutine only.
type SchemaTable struct {
	restored   map[string]checkpoint.StateSchema // by rowKey
	registered map[string]checkpoint.StateSchema // by rowKey
}

// schemaTable gives the package's registration functions the table of any
// backend that embeds one.
func (t *SchemaTable) schemaTable() *SchemaTable { return t }

type schemaHolder interface{ schemaTable() *SchemaTable }

// rowKey tells rows apart as the metadata does: by scope and name, and
// timers by kind.
func rowKey(r checkpoint.StateSchema) string {
	if r.Scope == checkpoint.ScopeTimers {
		return fmt.Sprintf("%s/%d", r.Scope, r.Kind)
	}
	return r.Scope + "/" + r.Name
}

// setRestored keeps the rows of a restored checkpoint's table.
func (t *SchemaTable) setRestored(rows []checkpoint.StateSchema) {
	t.restored = make(map[string]checkpoint.StateSchema, len(rows))
	for _, r := range rows {
		t.restored[rowKey(r)] = r
	}
}

func (t *SchemaTable) restoredRow(scope, name string) (checkpoint.StateSchema, bool) {
	r, ok := t.restored[scope+"/"+name]
	return r, ok
}

// forgetRestored drops the restored row of keyed state name, which is no
// longer held.
func (t *SchemaTable) forgetRestored(name string) {
	delete(t.restored, checkpoint.ScopeKeyed+"/"+name)
}

// ForgetRestored is forgetRestored for the LSM backend.
func (t *SchemaTable) ForgetRestored(name string) { t.forgetRestored(name) }

func (t *SchemaTable) register(r checkpoint.StateSchema) {
	if t.registered == nil {
		t.registered = map[string]checkpoint.StateSchema{}
	}
	r.Fingerprint = checkpoint.SchemaFingerprint(r)
	t.registered[rowKey(r)] = r
}

// Schemas returns the rows of the states registered on the backend, and
// the restored rows of states restored but not (yet) registered, whose
// bytes a snapshot carries over unchanged: the state table the next
// checkpoint records for this subtask, sorted.
func (t *SchemaTable) Schemas() []checkpoint.StateSchema {
	out := make([]checkpoint.StateSchema, 0, len(t.registered)+len(t.restored))
	for _, r := range t.registered {
		out = append(out, r)
	}
	for k, r := range t.restored {
		if _, ok := t.registered[k]; !ok {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return rowKey(out[i]) < rowKey(out[j]) })
	return out
}

// SetKeyedSchemas hands a keyed backend the state table of the checkpoint
// it restores, before Restore and before any state registers: rows of
// other scopes are ignored. It checks the recorded key type against K at
// once: keys place state in key groups by their Go value's hash and in the
// store by their bytes, so a key type may change only where neither does.
// Rows are nil for a checkpoint written before schemas were recorded.
func SetKeyedSchemas[K comparable](b Backend[K], rows []checkpoint.StateSchema) error {
	h, ok := b.(schemaHolder)
	if !ok {
		return fmt.Errorf("restore state schemas: backend %T keeps no schemas (a bug)", b)
	}
	keep := rows[:0:0]
	for _, r := range rows {
		if r.Scope == checkpoint.ScopeKeyed || r.Scope == checkpoint.ScopeTimers {
			if err := checkKey[K](r); err != nil {
				return err
			}
			keep = append(keep, r)
		}
	}
	h.schemaTable().setRestored(keep)
	return nil
}

// SetOperatorSchemas is SetKeyedSchemas for an operator backend: rows of
// scope operator.
func (b *OperatorBackend) SetOperatorSchemas(rows []checkpoint.StateSchema) {
	keep := rows[:0:0]
	for _, r := range rows {
		if r.Scope == checkpoint.ScopeOperator {
			keep = append(keep, r)
		}
	}
	b.schemas.setRestored(keep)
}

// checkKey refuses a recorded key type that K would place elsewhere.
func checkKey[K comparable](r checkpoint.StateSchema) error {
	if len(r.Key) == 0 {
		return nil
	}
	own, err := encodedSchema[K]()
	if err != nil {
		return err
	}
	if bytes.Equal(own, r.Key) {
		return nil
	}
	what := fmt.Sprintf("%s %q", Kind(r.Kind), r.Name)
	if r.Scope == checkpoint.ScopeTimers {
		what = Kind(r.Kind).String()
	}
	w, err := decodeStored(r.Key, what, "key")
	if err != nil {
		return err
	}
	_, compat, err := codec.Resolve[K](w)
	if err != nil {
		return fmt.Errorf("restore %s: key: %w; keys cannot be converted, since their hash places them: keep the key type, or re-key the state with the state processor", what, err)
	}
	hash := keygroup.HasherID[K]()
	if compat != codec.CompatibleAsIs || (r.KeyHash != "" && !keygroup.SameHash(r.KeyHash, hash)) {
		return fmt.Errorf("restore %s: key type was %s, now %s: its keys would be hashed or ordered differently (hash class %q, now %q): %w; keep the key type, or re-key the state with the state processor",
			what, w, mustSchema[K](), r.KeyHash, hash, codec.ErrIncompatible)
	}
	return nil
}

// decodeStored decodes a recorded schema; the metadata was validated when
// it was read, so an error here means a caller skipped that.
func decodeStored(b []byte, what, part string) (codec.Schema, error) {
	s, _, err := codec.DecodeSchema(b)
	if err != nil {
		return codec.Schema{}, fmt.Errorf("restore %s: recorded %s schema: %w", what, part, err)
	}
	return s, nil
}

func encodedSchema[T any]() ([]byte, error) {
	s, err := codec.SchemaFor[T]()
	if err != nil {
		return nil, err
	}
	return codec.AppendSchema(nil, s), nil
}

func mustSchema[T any]() codec.Schema {
	s, _ := codec.SchemaFor[T]()
	return s
}

// reader is the pair of codecs a state registers with: own writes and
// reads what the program stores; old reads the restored bytes, and differs
// from own (migrate) when they were written under another schema.
type reader[V any] struct {
	own, old codec.Codec[V]
	migrate  bool
}

// sameReader is the reader of a state with nothing (or identical bytes)
// to restore.
func sameReader[V any](c codec.Codec[V]) reader[V] { return reader[V]{own: c, old: c} }

// stampedReader wraps both codecs for TTL values.
func stampedReader[V any](r reader[V]) reader[stamped[V]] {
	return reader[stamped[V]]{own: stampedCodec(r.own), old: stampedCodec(r.old), migrate: r.migrate}
}

// resolveReader decides how the restored bytes of a state are read: stored
// is the recorded schema (empty: none recorded, read them as they are),
// what names the state for errors and part the schema ("value", "user
// key").
//
// The order of the rules (docs/compatibility.md): bytes the state's type
// reads as they are need nothing (a migration given for them has run
// already, when the checkpoint being restored was written); else the
// first migration whose old type reads them converts them, even where the
// type would read them on its own, since whoever wrote the function wants
// it to compute the new fields; else the type's own conversion (fields
// added, dropped, widened); else the state cannot be restored.
func resolveReader[V any](c codec.Codec[V], stored []byte, what, part string, migs ...Migration) (reader[V], error) {
	r := sameReader(c)
	mv, err := migrationsTo[V](migs, what)
	if err != nil {
		return r, err
	}
	if len(stored) == 0 {
		return r, nil
	}
	own, err := encodedSchema[V]()
	if err != nil || bytes.Equal(own, stored) {
		// A type without a schema cannot be registered anyway: its codec
		// (For) fails the same way first.
		return r, nil
	}
	w, err := decodeStored(stored, what, part)
	if err != nil {
		return r, err
	}
	dec, compat, err := codec.Resolve[V](w)
	switch compat {
	case codec.Identical, codec.CompatibleAsIs:
		return r, nil
	}
	var migErrs []error
	for _, m := range mv {
		d, merr := m.decoderFrom(w)
		if merr == nil {
			return reader[V]{own: c, old: resolvedCodec[V]{Codec: c, dec: d}, migrate: true}, nil
		}
		old, _ := m.types()
		migErrs = append(migErrs, fmt.Errorf("its migration from %s does not read it either: %w", old, merr))
	}
	if compat == codec.CompatibleAfterMigration {
		return reader[V]{own: c, old: resolvedCodec[V]{Codec: c, dec: dec}, migrate: true}, nil
	}
	var ie *codec.IncompatibleError
	if errors.As(err, &ie) {
		return r, &IncompatibleStateError{State: what, Part: part, Was: w.String(), Err: ie, Migrations: migErrs}
	}
	return r, fmt.Errorf("restore %s: %s: %w", what, part, err)
}

// resolvedCodec writes with the program's codec and decodes restored
// bytes with the resolved decoder.
type resolvedCodec[V any] struct {
	codec.Codec[V]
	dec codec.Decoder[V]
}

func (r resolvedCodec[V]) Decode(src []byte) (V, int, error) { return r.dec.Decode(src) }

// converter returns a StateSpec.Convert that rewrites one value from the
// old encoding into the program's.
func converter[V any](r reader[V]) func(dst, src []byte) ([]byte, int, error) {
	if !r.migrate {
		return nil
	}
	return func(dst, src []byte) ([]byte, int, error) {
		v, n, err := r.old.Decode(src)
		if err != nil {
			return dst, 0, asCorrupt(err)
		}
		return r.own.Append(dst, v), n, nil
	}
}

// IncompatibleStateError is a restored state that the program's type
// cannot read. It wraps codec.ErrIncompatible, and a restart cannot fix
// it.
type IncompatibleStateError struct {
	State string // `value state "total"`
	Part  string // "value", "user key", "element"
	Was   string // the recorded schema
	Err   *codec.IncompatibleError
	// Migrations say why each migration given for the state did not apply.
	Migrations []error
	// WaysOut replaces the usual advice where it does not apply (state the
	// engine keeps for a connector, which no weir.WithMigration can reach).
	WaysOut string
}

// maxMismatches bounds the mismatches Error names; Err keeps them all.
const maxMismatches = 5

func (e *IncompatibleStateError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "restore %s: the stored %s cannot be read as %s: ", e.State, e.Part, e.Err.Type)
	for i, m := range e.Err.Mismatches {
		if i == maxMismatches {
			fmt.Fprintf(&b, "; and %d more", len(e.Err.Mismatches)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "field %s was %s, now %s (%s)", m.Path, m.Was, m.Now, m.Why)
	}
	for _, m := range e.Migrations {
		fmt.Fprintf(&b, "; %v", m)
	}
	if e.WaysOut != "" {
		b.WriteString("; ways out: " + e.WaysOut)
		return b.String()
	}
	b.WriteString("; ways out: convert the old values with a migration function (weir.WithMigration), keep the old type, or start the state empty under a new name (restoring with --allow-non-restored-state then drops the old one)")
	return b.String()
}

func (e *IncompatibleStateError) Unwrap() error { return e.Err }

// keyedRow is the state-table row of a keyed state registered with key K,
// user key UK (map state, else nil) and value V.
func keyedRow[K comparable, V any](name string, kind Kind, userKey []byte) checkpoint.StateSchema {
	key, _ := encodedSchema[K]()
	value, _ := encodedSchema[V]()
	return checkpoint.StateSchema{
		Name: name, Scope: checkpoint.ScopeKeyed, Kind: uint8(kind),
		Key: key, KeyHash: keygroup.HasherID[K](), UserKey: userKey, Value: value,
	}
}

// timerRows are the rows of a keyed backend's two timer sections, which
// every keyed operator has.
func timerRows[K comparable]() []checkpoint.StateSchema {
	key, _ := encodedSchema[K]()
	out := make([]checkpoint.StateSchema, 0, 2)
	for _, k := range [...]Kind{KindTimers, KindEventTimers} {
		out = append(out, checkpoint.StateSchema{Scope: checkpoint.ScopeTimers, Kind: uint8(k), Key: key, KeyHash: keygroup.HasherID[K]()})
	}
	return out
}

// keyedValueReader resolves a keyed state's value type against its
// restored row (keyedMapReaders does the same for a map state's user keys
// and values), records the state's row for the next checkpoint, and
// returns the reader to register with.
func keyedValueReader[K comparable, V any](b Backend[K], name string, kind Kind, c codec.Codec[V], migs []Migration) (reader[V], error) {
	t := tableOf(b)
	what := fmt.Sprintf("%s %q", kind, name)
	if t == nil {
		return resolveReader(c, nil, what, "value", migs...)
	}
	row, _ := t.restoredRow(checkpoint.ScopeKeyed, name)
	r, err := resolveReader(c, row.Value, what, "value", migs...)
	if err != nil {
		return r, err
	}
	t.register(keyedRow[K, V](name, kind, nil))
	return r, nil
}

func tableOf[K comparable](b Backend[K]) *SchemaTable {
	if h, ok := b.(schemaHolder); ok {
		return h.schemaTable()
	}
	return nil
}

// keyedMapReaders is keyedValueReader for a map state's user keys and
// values.
func keyedMapReaders[K comparable, UK comparable, UV any](b Backend[K], name string, kind Kind, kc codec.Codec[UK], vc codec.Codec[UV], migs []Migration) (reader[UK], reader[UV], error) {
	t := tableOf(b)
	what := fmt.Sprintf("%s %q", kind, name)
	if t == nil {
		vr, err := resolveReader(vc, nil, what, "value", migs...)
		return sameReader(kc), vr, err
	}
	row, _ := t.restoredRow(checkpoint.ScopeKeyed, name)
	kr, err := resolveReader(kc, row.UserKey, what, "user key")
	if err != nil {
		return kr, sameReader(vc), err
	}
	vr, err := resolveReader(vc, row.Value, what, "value", migs...)
	if err != nil {
		return kr, vr, err
	}
	uk, _ := encodedSchema[UK]()
	t.register(keyedRow[K, UV](name, kind, uk))
	return kr, vr, nil
}

// InitKeyedSchemas records the timer rows of a keyed backend with key K,
// which every keyed operator has; a backend calls it once, when made.
func InitKeyedSchemas[K comparable](t *SchemaTable) {
	for _, r := range timerRows[K]() {
		t.register(r)
	}
}
