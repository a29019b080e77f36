package weir

import "github.com/weirstream/weir/internal/state"

// WithMigration converts a state's restored values that were written as Old
// into the state's type New, with f: the way to keep state across a change
// the engine cannot make on its own, such as a field whose kind changed or
// a new field computed from old ones (docs/compatibility.md lists what
// evolves without one). Keep the old type in the program under another Go
// name; struct names are not part of a state's schema:
//
//	type TotalV1 struct{ User string; Count, Sum int64 }   // as it was
//	type Total struct{ User string; Count int64; Avg float64 }
//	total, err := weir.GetValueState[Total](kc, "total",
//		weir.WithMigration(func(old TotalV1) (Total, error) {
//			return Total{User: old.User, Count: old.Count, Avg: float64(old.Sum) / float64(old.Count)}, nil
//		}))
//
// f runs once per restored value, at restore, before the first record:
// the state then holds only New, and the next checkpoint records New's
// schema, so the option is inert on later restores and may be deleted once
// no savepoint older than it is kept. A restored value that New reads as
// it is is not converted. For list and reducing state f converts each
// element or value, for map state each value. An error from f fails the
// job at once, naming the value (a restart would meet it again). Several
// WithMigration options may be given, one per older type.
func WithMigration[Old, New any](f func(old Old) (New, error)) StateOption {
	return StateOption{func(o *stateOptions) { o.reg = append(o.reg, state.WithMigration(state.NewMigration(f))) }}
}
