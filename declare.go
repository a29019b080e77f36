package weir

import (
	"fmt"

	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/state"
)

// StateDecl declares one state of an operator before the job runs; see
// Stream.Declare. Make one with ValueStateOf, ListStateOf, MapStateOf,
// ReducingStateOf, OperatorListStateOf or UnionListStateOf.
type StateDecl struct {
	d     state.Declared
	keyed bool
	err   error
}

// ValueStateOf declares the value state name of V, with the options its
// GetValueState gives (WithTTL, WithMigration).
func ValueStateOf[V any](name string, opts ...StateOption) StateDecl {
	return declareKeyed[V](name, state.KindValue, opts)
}

// ListStateOf declares the list state name with elements of V.
func ListStateOf[V any](name string, opts ...StateOption) StateDecl {
	return declareKeyed[V](name, state.KindList, opts)
}

// ReducingStateOf declares the reducing state name of V.
func ReducingStateOf[V any](name string, opts ...StateOption) StateDecl {
	return declareKeyed[V](name, state.KindReducing, opts)
}

// MapStateOf declares the map state name of UK to UV.
func MapStateOf[UK comparable, UV any](name string, opts ...StateOption) StateDecl {
	reg, err := stateOpts(name, opts)
	if err != nil {
		return StateDecl{err: err}
	}
	ttl, migs := state.DeclarationOptions(reg)
	kind := state.KindMap
	if ttl {
		kind |= state.KindTTL
	}
	d, err := state.DeclareMap[UK, UV](name, kind, migs...)
	d.Options = reg
	return StateDecl{d: d, keyed: true, err: err}
}

// OperatorListStateOf declares the operator list state name of T
// (GetOperatorListState).
func OperatorListStateOf[T any](name string) StateDecl {
	d, err := state.DeclareOperatorList[T](name)
	return StateDecl{d: d, err: err}
}

// UnionListStateOf declares the union list state name of T
// (GetUnionListState).
func UnionListStateOf[T any](name string) StateDecl {
	return OperatorListStateOf[T](runtime.UnionStatePrefix + name)
}

func declareKeyed[V any](name string, kind state.Kind, opts []StateOption) StateDecl {
	reg, err := stateOpts(name, opts)
	if err != nil {
		return StateDecl{err: err}
	}
	ttl, migs := state.DeclarationOptions(reg)
	if ttl {
		kind |= state.KindTTL
	}
	d, err := state.DeclareKeyed[V](name, kind, migs...)
	d.Options = reg
	return StateDecl{d: d, keyed: true, err: err}
}

// Declare lists the states the operator's function registers, with their
// types and options, so that a restore checks them against the checkpoint
// before anything runs: a state the program cannot read (a field whose
// kind changed without a WithMigration), or one the checkpoint holds that the
// operator no longer declares, then fails the job at once, before a task
// opens a source or a sink, and `savepoint check` can tell in advance.
// The list is the operator's whole set of states; the function still
// registers each in Open, with the same types and options:
//
//	totals := weir.Process(keyed, newCounter).UID("totals").
//		Declare(weir.ValueStateOf[Total]("total"), weir.MapStateOf[string, int64]("seen"))
//
// Without Declare, states are checked as the tasks register them: a state
// that cannot be read still fails the job without a restart, but after
// the job was deployed.
func (s Stream[T]) Declare(decls ...StateDecl) Stream[T] {
	declare(s.env, s.node, decls)
	return s
}

func declare(env *Env, n *dataflow.Node, decls []StateDecl) {
	if n.States == nil {
		n.States = &state.OperatorDeclarations{}
	}
	for _, d := range decls {
		if d.err != nil {
			env.fail(fmt.Errorf("operator %q: declare state: %w", n.Name, d.err))
			return
		}
		if d.keyed && n.States.CheckKey == nil {
			env.fail(fmt.Errorf("operator %q: declare %s: keyed state needs a keyed operator (Process on a KeyBy stream)", n.Name, d.d.Desc))
			return
		}
		for _, o := range n.States.States {
			if o.Scope == d.d.Scope && o.Name == d.d.Name {
				env.fail(fmt.Errorf("operator %q: state %q is declared twice", n.Name, d.d.Name))
				return
			}
		}
		n.States.States = append(n.States.States, d.d)
	}
	n.States.Complete = true
}
