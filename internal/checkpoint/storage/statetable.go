package storage

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/codec"
)

// validateTables checks the operators' state tables (format version 3,
// docs/design/state-evolution.md §2.1): every row is well formed, names
// each state once, and its schemas decode; and once a table exists, every
// operator's state bytes have rows, since a restore that checks types
// against the table would otherwise pass state it knows nothing about. The
// schemas are checked here rather than in package checkpoint because that
// package is a pure core and may not import internal/codec
// (internal/archtest).
func validateTables(md *checkpoint.Metadata) error {
	tables := hasStateTable(md)
	for _, op := range md.Operators {
		for _, st := range op.Subtasks {
			// The per-subtask rows ride on acknowledgements only; the
			// JobManager merges them into op.States. Rows left here would
			// be a second, unchecked copy a restore might read instead.
			if n := len(st.State.Schemas); n > 0 {
				return fmt.Errorf("operator %q subtask %d: %d per-subtask state schemas in the metadata; they belong in acknowledgements and are merged into the operator's state table", op.UID, st.Subtask, n)
			}
		}
		type rowID struct {
			scope, name string
			kind        uint8 // told apart only for timers, whose rows are all named ""
		}
		seen := make(map[rowID]bool, len(op.States))
		for _, r := range op.States {
			if err := validateRow(r); err != nil {
				return fmt.Errorf("operator %q %s: %w", op.UID, rowName(r), err)
			}
			id := rowID{scope: r.Scope, name: r.Name}
			if r.Scope == checkpoint.ScopeTimers {
				id.kind = r.Kind
			}
			if seen[id] {
				return fmt.Errorf("operator %q %s: listed twice in the state table", op.UID, rowName(r))
			}
			seen[id] = true
		}
		if tables {
			if err := checkCovered(&op, func(scope, name string) bool { return seen[rowID{scope: scope, name: name}] }); err != nil {
				return fmt.Errorf("operator %q: %w", op.UID, err)
			}
		}
	}
	return nil
}

// rowName names a row in errors: its state, or for timers their kind.
func rowName(r checkpoint.StateSchema) string {
	if r.Scope == checkpoint.ScopeTimers {
		return "timers of kind " + strconv.Itoa(int(r.Kind))
	}
	return fmt.Sprintf("state %q (%s)", r.Name, r.Scope)
}

// validateRow checks one row on its own: a known scope, the schemas the
// scope calls for and no others, each decoding whole, and the fingerprint.
func validateRow(r checkpoint.StateSchema) error {
	var key, value bool // whether the scope needs a key and a value schema
	switch r.Scope {
	case checkpoint.ScopeKeyed:
		key, value = true, true
	case checkpoint.ScopeTimers:
		key = true
	case checkpoint.ScopeOperator, checkpoint.ScopeChannel, checkpoint.ScopeWeakLog:
		value = true
	default:
		return fmt.Errorf("unknown scope %q", r.Scope)
	}
	switch {
	case r.Scope == checkpoint.ScopeTimers && r.Name != "":
		return fmt.Errorf("timers are named %q; want \"\", as their keyed-state sections", r.Name)
	case r.Scope != checkpoint.ScopeTimers && r.Name == "":
		return fmt.Errorf("no name")
	case key != (len(r.Key) > 0):
		return fmt.Errorf("key schema present is %t; scope %s wants %t", len(r.Key) > 0, r.Scope, key)
	case value != (len(r.Value) > 0):
		return fmt.Errorf("value schema present is %t; scope %s wants %t", len(r.Value) > 0, r.Scope, value)
	case len(r.UserKey) > 0 && r.Scope != checkpoint.ScopeKeyed:
		return fmt.Errorf("a user-key schema, which only keyed (map) state has")
	case r.KeyHash != "" && len(r.Key) == 0:
		return fmt.Errorf("key-hash class %q without a key schema", r.KeyHash)
	}
	for _, f := range [...]struct {
		what string
		b    []byte
	}{{"key", r.Key}, {"user-key", r.UserKey}, {"namespace", r.Namespace}, {"value", r.Value}} {
		if len(f.b) == 0 {
			continue
		}
		_, n, err := codec.DecodeSchema(f.b)
		if err != nil {
			return fmt.Errorf("%s schema: %w", f.what, err)
		}
		if n != len(f.b) {
			return fmt.Errorf("%s schema: %d bytes after the %d-byte schema", f.what, len(f.b)-n, n)
		}
	}
	if want := checkpoint.SchemaFingerprint(r); r.Fingerprint != want {
		return fmt.Errorf("fingerprint %q does not match its schemas (%s)", r.Fingerprint, want)
	}
	return nil
}

// checkCovered checks that the operator's state bytes in the subtasks have
// rows: keyed state some keyed or timers row, each operator list state a
// row of its name, each input with channel state a row "in<i>".
func checkCovered(op *checkpoint.OperatorState, has func(scope, name string) bool) error {
	keyedRows := false
	for _, r := range op.States {
		keyedRows = keyedRows || r.Scope == checkpoint.ScopeKeyed || r.Scope == checkpoint.ScopeTimers
	}
	for _, st := range op.Subtasks {
		if (st.State.Keyed != nil || st.State.Incremental != nil) && !keyedRows {
			return fmt.Errorf("subtask %d has keyed state but the state table has no keyed or timers rows", st.Subtask)
		}
		for _, name := range slices.Sorted(maps.Keys(st.State.Operator)) { // sorted: the same file, the same error
			if !has(checkpoint.ScopeOperator, name) {
				return fmt.Errorf("subtask %d has operator list state %q without a row in the state table", st.Subtask, name)
			}
		}
		if c := st.State.Channels; c != nil {
			for _, ch := range c.Channels {
				if name := "in" + strconv.Itoa(ch.Input); !has(checkpoint.ScopeChannel, name) {
					return fmt.Errorf("subtask %d has channel state of input %d without a row %q in the state table", st.Subtask, ch.Input, name)
				}
			}
		}
	}
	return nil
}
