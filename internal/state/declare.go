package state

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/codec"
)

// Declared is a state a program declares when it builds its job graph,
// before any task runs: its name, kind and Go types, bound into Check. The
// JobManager checks a restored checkpoint's state table against the
// declarations of every operator before it deploys anything, so that a
// state the new program cannot read fails the submission rather than a
// task; `savepoint check` runs the same check without running the job.
type Declared struct {
	Scope string // checkpoint.ScopeKeyed or ScopeOperator
	Name  string
	Kind  Kind // keyed states: with KindTTL when declared with a TTL
	// Desc names kind and types, for reports; a registration of the state
	// must have the same.
	Desc string
	// Options are the registration options the declaration was given: a
	// registration without options of its own takes them.
	Options []RegisterOption
	// check resolves a stored row against the declared types.
	check func(row checkpoint.StateSchema) (Verdict, error)
}

// Verdict is how a restore reads one stored state.
type Verdict string

const (
	VerdictIdentical  Verdict = "identical"
	VerdictCompatible Verdict = "compatible"      // read as it is (renamed, widened varint)
	VerdictConverted  Verdict = "after migration" // converted at restore, by the type or a function
	VerdictNew        Verdict = "new"             // declared, not in the checkpoint: starts empty
	VerdictDropped    Verdict = "dropped"         // in the checkpoint, not declared
	VerdictUnknown    Verdict = "unknown"         // checkpoint without schemas
	VerdictIncompat   Verdict = "incompatible"
)

// verdictOf turns a reader into its verdict.
func verdictOf[V any](r reader[V], stored []byte) Verdict {
	switch {
	case r.migrate:
		return VerdictConverted
	case len(stored) == 0:
		return VerdictUnknown
	}
	if own, err := encodedSchema[V](); err == nil && string(own) == string(stored) {
		return VerdictIdentical
	}
	return VerdictCompatible
}

// DeclareKeyed declares a keyed value, reducing or list state of V (its
// value, or list element), of the given kind (with KindTTL for TTL).
func DeclareKeyed[V any](name string, kind Kind, migs ...Migration) (Declared, error) {
	c, err := codec.For[V]()
	if err != nil {
		return Declared{}, fmt.Errorf("declare %s %q: %w", kind, name, err)
	}
	if _, err := migrationsTo[V](migs, fmt.Sprintf("%s %q", kind, name)); err != nil {
		return Declared{}, err
	}
	return Declared{
		Scope: checkpoint.ScopeKeyed, Name: name, Kind: kind, Desc: fmt.Sprintf("%s of %T", kind, *new(V)),
		check: func(row checkpoint.StateSchema) (Verdict, error) {
			r, err := resolveReader(c, row.Value, fmt.Sprintf("%s %q", kind, name), "value", migs...)
			return verdictOf(r, row.Value), err
		},
	}, nil
}

// DeclareMap declares a keyed map state of UK to UV.
func DeclareMap[UK comparable, UV any](name string, kind Kind, migs ...Migration) (Declared, error) {
	kc, err := codec.For[UK]()
	if err != nil {
		return Declared{}, fmt.Errorf("declare %s %q: map key: %w", kind, name, err)
	}
	vc, err := codec.For[UV]()
	if err != nil {
		return Declared{}, fmt.Errorf("declare %s %q: %w", kind, name, err)
	}
	what := fmt.Sprintf("%s %q", kind, name)
	if _, err := migrationsTo[UV](migs, what); err != nil {
		return Declared{}, err
	}
	return Declared{
		Scope: checkpoint.ScopeKeyed, Name: name, Kind: kind, Desc: fmt.Sprintf("%s of %T to %T", kind, *new(UK), *new(UV)),
		check: func(row checkpoint.StateSchema) (Verdict, error) {
			kr, err := resolveReader(kc, row.UserKey, what, "user key")
			if err != nil {
				return VerdictIncompat, err
			}
			vr, err := resolveReader(vc, row.Value, what, "value", migs...)
			if v := verdictOf(vr, row.Value); v != VerdictIdentical || err != nil {
				return v, err
			}
			return verdictOf(kr, row.UserKey), nil
		},
	}, nil
}

// DeclareOperatorList declares an operator list state of T.
func DeclareOperatorList[T any](name string) (Declared, error) {
	c, err := codec.For[T]()
	if err != nil {
		return Declared{}, fmt.Errorf("declare operator list state %q: %w", name, err)
	}
	return Declared{
		Scope: checkpoint.ScopeOperator, Name: name, Desc: fmt.Sprintf("operator list state of %T", *new(T)),
		check: func(row checkpoint.StateSchema) (Verdict, error) {
			r, err := resolveReader(c, row.Value, fmt.Sprintf("operator list state %q", name), "element")
			return verdictOf(r, row.Value), err
		},
	}, nil
}

// DeclareTransactionHandles declares the operator list state name in
// which a two-phase-commit sink keeps its transaction handles of type TXN.
// It is checked like any operator list state; its advice differs, since
// the handle type is the connector's and no migration function reaches
// it.
func DeclareTransactionHandles[TXN any](name string) (Declared, error) {
	d, err := DeclareOperatorList[TXN](name)
	if err != nil {
		return d, err
	}
	d.Desc = fmt.Sprintf("transaction handles of %T", *new(TXN))
	check := d.check
	d.check = func(row checkpoint.StateSchema) (Verdict, error) {
		v, err := check(row)
		var ie *IncompatibleStateError
		if errors.As(err, &ie) {
			ie.State = fmt.Sprintf("the sink's transaction handles (%q)", name)
			ie.WaysOut = "restore with the sink (connector) version that wrote the checkpoint, or change its handle type only in ways that read the old one (add or drop fields, widen numbers)"
		}
		return v, err
	}
	return d, nil
}

// Finding is the outcome of checking one state of an operator.
type Finding struct {
	Scope, Name string
	Desc        string // the program's declaration, "" for a dropped state
	Verdict     Verdict
	Err         error // why it cannot be restored (incompatible, dropped)
}

// OperatorDeclarations are the declared states of one operator: the key
// check (keyed operators), its states, and whether they are all of its
// states (complete), so that a checkpointed state none declares is a
// dropped one.
type OperatorDeclarations struct {
	// CheckKey checks a row's recorded key type; nil for operators
	// without keys.
	CheckKey func(row checkpoint.StateSchema) error
	States   []Declared
	Complete bool
}

// DeclareKey returns the key check of a keyed operator with key K.
func DeclareKey[K comparable]() func(row checkpoint.StateSchema) error { return checkKey[K] }

// Check compares an operator's state table (rows; nil for a checkpoint
// written before schemas were recorded) with the declarations.
// allowDropped is --allow-non-restored-state.
func (d *OperatorDeclarations) Check(rows []checkpoint.StateSchema, allowDropped bool) []Finding {
	var out []Finding
	byName := map[string]checkpoint.StateSchema{}
	for _, r := range rows {
		if d.CheckKey != nil && len(r.Key) > 0 {
			if err := d.CheckKey(r); err != nil {
				out = append(out, Finding{Scope: r.Scope, Name: r.Name, Verdict: VerdictIncompat, Err: err})
			}
		}
		if r.Scope == checkpoint.ScopeKeyed || r.Scope == checkpoint.ScopeOperator {
			byName[r.Scope+"/"+r.Name] = r
		}
	}
	declared := map[string]bool{}
	for _, s := range d.States {
		declared[s.Scope+"/"+s.Name] = true
		r, ok := byName[s.Scope+"/"+s.Name]
		f := Finding{Scope: s.Scope, Name: s.Name, Desc: s.Desc}
		switch {
		case !ok && rows == nil:
			f.Verdict = VerdictUnknown
		case !ok:
			f.Verdict = VerdictNew
		case r.Scope == checkpoint.ScopeKeyed && Kind(r.Kind) != s.Kind:
			f.Verdict = VerdictIncompat
			f.Err = fmt.Errorf("%s %q: the checkpoint holds it as %s, the program declares %s; keep the kind, or declare it under a new name (restoring with --allow-non-restored-state then drops the old one): %w",
				Kind(r.Kind), s.Name, Kind(r.Kind), s.Kind, codec.ErrIncompatible)
		default:
			f.Verdict, f.Err = s.check(r)
			if f.Err != nil {
				f.Verdict = VerdictIncompat
			}
		}
		out = append(out, f)
	}
	if d.Complete {
		for k, r := range byName {
			if declared[k] || strings.HasPrefix(r.Name, "union/weir.") || r.Name == "two-phase-commit" {
				continue // the engine's own operator states
			}
			f := Finding{Scope: r.Scope, Name: r.Name, Verdict: VerdictDropped}
			if !allowDropped {
				f.Err = fmt.Errorf("%s %q is in the checkpoint but the operator no longer declares it: declare it, or restore with --allow-non-restored-state to drop it", scopeKind(r), r.Name)
			}
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Scope+out[i].Name < out[j].Scope+out[j].Name })
	return out
}

func scopeKind(r checkpoint.StateSchema) string {
	if r.Scope == checkpoint.ScopeKeyed {
		return Kind(r.Kind).String()
	}
	return "operator list state"
}

// FindingsErr joins the findings that block a restore, nil if none.
func FindingsErr(fs []Finding) error {
	var errs []error
	for _, f := range fs {
		if f.Err != nil {
			errs = append(errs, f.Err)
		}
	}
	return errors.Join(errs...)
}

// OptionsFor returns the options to register keyed state name with: opts,
// or, when there are none, those its declaration was given.
func (d *OperatorDeclarations) OptionsFor(name string, opts []RegisterOption) []RegisterOption {
	if d == nil || len(opts) > 0 {
		return opts
	}
	for _, s := range d.States {
		if s.Scope == checkpoint.ScopeKeyed && s.Name == name {
			return s.Options
		}
	}
	return opts
}

// CheckRegistration checks a keyed registration of name, described by
// desc (kind and types, as registration errors name them), against the
// declarations. A registration that disagrees with its declaration, or of
// a state missing from a complete declaration, is an error: the
// JobManager checked the declaration, so the state must be what it says.
func (d *OperatorDeclarations) CheckRegistration(name, desc string) error {
	if d == nil {
		return nil
	}
	for _, s := range d.States {
		if s.Scope != checkpoint.ScopeKeyed || s.Name != name {
			continue
		}
		if s.Desc != desc {
			return fmt.Errorf("register state %q as %s: it is declared as %s; register it as declared, or change the declaration: %w", name, desc, s.Desc, ErrStateMismatch)
		}
		return nil
	}
	if d.Complete {
		return fmt.Errorf("register state %q: the operator declares its states (Declare) and %q is not among them; add it to the declaration", name, name)
	}
	return nil
}

// DeclarationOptions reads what a declaration needs of registration
// options: whether they give a TTL, and their migrations.
func DeclarationOptions(opts []RegisterOption) (ttl bool, migs []Migration) {
	o := options(opts)
	return o.ttl != nil, o.migrations
}
