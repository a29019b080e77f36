package stateproc

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/stateread"
)

// Savepoint is a checkpoint or savepoint opened for reading, its files
// verified.
type Savepoint struct {
	path string
	md   *checkpoint.Metadata
	cp   *stateread.Checkpoint
}

// OpenOption configures Open.
type OpenOption interface{ apply(*openOptions) }

type openOptions struct{ tempDir string }

type optionFunc func(*openOptions)

func (f optionFunc) apply(o *openOptions) { f(o) }

// TempDir sets the folder under which the stores of an incremental (lsm)
// checkpoint are copied and written out in the savepoint format while
// they are read or kept (default: the system's temporary folder). Reading
// an operator needs free space there of about its state in the savepoint
// format plus its largest subtask's store.
func TempDir(dir string) OpenOption {
	return optionFunc(func(o *openOptions) { o.tempDir = dir })
}

// Open loads the checkpoint or savepoint at path (a chk-N folder, its
// _metadata, or a savepoint folder) and verifies its files. Incremental
// (lsm) checkpoints are read too: each subtask's store is copied to the
// temporary folder (TempDir) and read as a savepoint of it would be.
func Open(ctx context.Context, path string, opts ...OpenOption) (*Savepoint, error) {
	var o openOptions
	for _, opt := range opts {
		opt.apply(&o)
	}
	cp, err := stateread.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	cp.TempDir = o.tempDir
	return &Savepoint{path: path, md: cp.Metadata, cp: cp}, nil
}

// Operator describes one operator's state in a savepoint.
type Operator struct {
	UID            string
	Parallelism    int
	MaxParallelism int
	// States are the recorded states (empty for a checkpoint written
	// before schemas were recorded).
	States []State
}

// State is one recorded state of an operator.
type State struct {
	// Scope is "keyed", "timers", "operator" or "channel".
	Scope string
	Name  string
	// Kind is the state's kind ("value state", "map state with TTL",
	// "event-time timers"), for keyed state and timers.
	Kind string
	// Key, UserKey and Value are the recorded types, in Go-like notation
	// (struct Total{User string; Count int64}), or "" where the state has
	// none.
	Key, UserKey, Value string
}

// Operators lists the operators that hold state.
func (s *Savepoint) Operators() []Operator {
	var out []Operator
	for _, op := range s.md.Operators {
		o := Operator{UID: op.UID, Parallelism: op.Parallelism, MaxParallelism: op.MaxParallelism}
		for _, r := range op.States {
			st := State{Scope: r.Scope, Name: r.Name, Key: schemaText(r.Key), UserKey: schemaText(r.UserKey), Value: schemaText(r.Value)}
			if r.Scope == checkpoint.ScopeKeyed || r.Scope == checkpoint.ScopeTimers {
				st.Kind = state.Kind(r.Kind).String()
			}
			o.States = append(o.States, st)
		}
		out = append(out, o)
	}
	return out
}

func schemaText(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	s, _, err := codec.DecodeSchema(b)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return s.String()
}

// ReadValues reads the keyed value state name of operator uid, as K to V.
// V may differ from the type the state was written with as a restore
// allows (docs/compatibility.md).
func ReadValues[K comparable, V any](ctx context.Context, s *Savepoint, uid, name string) (map[K]V, error) {
	return readKeyed(ctx, s, uid, name, func(b *state.KeyedBackend[K]) (func() (V, bool), error) {
		vc, err := codec.For[V]()
		if err != nil {
			return nil, err
		}
		st, err := state.RegisterValue(b, name, vc)
		if err != nil {
			return nil, err
		}
		return st.Value, nil
	})
}

// ReadMaps reads the keyed map state name of operator uid.
func ReadMaps[K, UK comparable, UV any](ctx context.Context, s *Savepoint, uid, name string) (map[K]map[UK]UV, error) {
	return readKeyed(ctx, s, uid, name, func(b *state.KeyedBackend[K]) (func() (map[UK]UV, bool), error) {
		kc, err := codec.For[UK]()
		if err != nil {
			return nil, err
		}
		vc, err := codec.For[UV]()
		if err != nil {
			return nil, err
		}
		st, err := state.RegisterMap(b, name, kc, vc)
		if err != nil {
			return nil, err
		}
		return func() (map[UK]UV, bool) { return maps.Collect(st.All()), true }, nil
	})
}

// ReadLists reads the keyed list state name of operator uid.
func ReadLists[K comparable, V any](ctx context.Context, s *Savepoint, uid, name string) (map[K][]V, error) {
	return readKeyed(ctx, s, uid, name, func(b *state.KeyedBackend[K]) (func() ([]V, bool), error) {
		vc, err := codec.For[V]()
		if err != nil {
			return nil, err
		}
		st, err := state.RegisterList(b, name, vc)
		if err != nil {
			return nil, err
		}
		return func() ([]V, bool) { return st.Get(), true }, nil
	})
}

// readKeyed restores operator uid, registers state name with register,
// and reads the current key's value with the function it returns, for
// every key of the state.
func readKeyed[K comparable, R any](ctx context.Context, s *Savepoint, uid, name string, register func(*state.KeyedBackend[K]) (func() (R, bool), error)) (map[K]R, error) {
	b, err := restoreOperator[K](ctx, s, uid)
	if err != nil {
		return nil, err
	}
	get, err := register(b)
	if err != nil {
		return nil, fmt.Errorf("read %s operator %q: %w", s.path, uid, err)
	}
	out := map[K]R{}
	for k, kg := range b.Keys(name) {
		b.SetCurrentKey(k, kg)
		if v, ok := get(); ok {
			out[k] = v
		}
	}
	return out, nil
}

// restoreOperator loads every key group of operator uid into one heap
// backend, as a restore at parallelism 1 would, with the recorded schemas.
// An incremental checkpoint's stores are read as the canonical files
// stateread writes them out as, so both kinds restore alike.
func restoreOperator[K comparable](ctx context.Context, s *Savepoint, uid string) (_ *state.KeyedBackend[K], err error) {
	op := s.md.Operator(uid)
	if op == nil {
		return nil, fmt.Errorf("read %s: no operator %q (it holds %s)", s.path, uid, uids(s.md))
	}
	kc, err := codec.For[K]()
	if err != nil {
		return nil, fmt.Errorf("read %s operator %q: key type: %w", s.path, uid, err)
	}
	maxP := op.MaxParallelism
	b := state.NewKeyedBackend(kc, keygroup.Range{Start: 0, End: maxP}, maxP)
	if err := state.SetKeyedSchemas(b, op.States); err != nil {
		return nil, fmt.Errorf("read %s operator %q: %w", s.path, uid, err)
	}
	srcs, release, err := s.cp.KeyedSources(ctx, uid)
	defer func() {
		if rerr := release(); rerr != nil {
			err = errors.Join(err, fmt.Errorf("read %s operator %q: remove the copies of its stores: %w", s.path, uid, rerr))
		}
	}()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", s.path, err)
	}
	if len(srcs) == 0 {
		return nil, fmt.Errorf("read %s: operator %q holds no keyed state", s.path, uid)
	}
	if err := b.Restore(ctx, srcs); err != nil {
		return nil, fmt.Errorf("read %s operator %q: %w", s.path, uid, err)
	}
	return b, nil
}

func uids(md *checkpoint.Metadata) []string {
	var out []string
	for _, op := range md.Operators {
		out = append(out, op.UID)
	}
	return out
}
