package weir

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/state"
)

// State schemas in checkpoints (docs/compatibility.md): each operator's
// snapshot reports the schema of every state it holds, and a restore hands
// the recorded ones to its backends, which read values written under an
// older schema of a type or refuse the ones the program's types cannot
// read.

// schemaRows is implemented by both keyed backends and the operator
// backend.
type schemaRows interface {
	Schemas() []checkpoint.StateSchema
}

// stateRows returns the state-table rows of the given backends, read on
// the task goroutine (the backends are not safe for concurrent use).
func stateRows(backends ...any) []checkpoint.StateSchema {
	var rows []checkpoint.StateSchema
	for _, b := range backends {
		if s, ok := b.(schemaRows); ok {
			rows = append(rows, s.Schemas()...)
		}
	}
	return rows
}

// restoredSchemas returns the state table of the restored checkpoint, nil
// without one.
func restoredSchemas(oc *dataflow.OperatorContext) []checkpoint.StateSchema {
	if oc.Restored == nil {
		return nil
	}
	return oc.Restored.Schemas
}

// txnRow is the row of a two-phase-commit sink's transaction handles,
// described by the handle type TXN.
func txnRow[TXN any]() []checkpoint.StateSchema {
	s, err := codec.SchemaFor[TXN]()
	if err != nil {
		return nil // For[TXN] failed first, in Open
	}
	r := checkpoint.StateSchema{Name: twoPhaseStateName, Scope: checkpoint.ScopeOperator, Value: codec.AppendSchema(nil, s)}
	r.Fingerprint = checkpoint.SchemaFingerprint(r)
	return []checkpoint.StateSchema{r}
}

// restoredTxnDecoder returns the decoder of the transaction handles a
// checkpoint holds: own when the checkpoint recorded no schema for them
// (metadata before version 3) or the schema TXN has now, else the decoder
// codec.Resolve finds for the recorded one (fields added, dropped or
// widened in the handle type), or an error naming the field when TXN
// cannot read it. Handles are read once, on restore, so a resolved
// decoder costs nothing at run time.
func restoredTxnDecoder[TXN any](rows []checkpoint.StateSchema, own codec.Decoder[TXN]) (codec.Decoder[TXN], error) {
	for _, r := range rows {
		if r.Scope != checkpoint.ScopeOperator || r.Name != twoPhaseStateName || len(r.Value) == 0 {
			continue
		}
		if now := txnRow[TXN](); len(now) == 1 && now[0].Fingerprint == r.Fingerprint {
			return own, nil
		}
		ws, _, err := codec.DecodeSchema(r.Value)
		if err != nil {
			return nil, fmt.Errorf("schema of the transaction handles: %w", err)
		}
		dec, _, err := codec.Resolve[TXN](ws)
		if err != nil {
			return nil, fmt.Errorf("transaction handles recorded as %s cannot be read as %s: %w", ws, reflect.TypeFor[TXN](), err)
		}
		return dec, nil
	}
	return own, nil
}

// restoreFailure marks an error of restoring state that no restart can
// fix as unrecoverable: state the program's types cannot read, bytes that
// do not decode (state files are checksummed, so this is not a transient
// read error), a state registered with another kind. A restart would read
// the same checkpoint with the same program and fail the same way; the
// job fails at once instead, with this error.
func restoreFailure(err error) error {
	if err == nil || runtime.IsUnrecoverable(err) {
		return err
	}
	if errors.Is(err, codec.ErrIncompatible) || errors.Is(err, codec.ErrCorrupt) || errors.Is(err, state.ErrStateMismatch) || errors.Is(err, state.ErrMigration) {
		return runtime.Unrecoverable(err)
	}
	return err
}
