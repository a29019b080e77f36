package lsm

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

// State evolution on both backends: states written with one version of
// their types restore into another, through the schemas the snapshot's
// rows record (package state's schemas.go).

type totalV1 struct {
	User       string
	Count, Sum int64
}

// totalAdded adds a field: it restores as zero.
type totalAdded struct {
	User            string
	Count, Sum, Max int64
}

// totalReshaped drops Count, moves Sum first and renames User through its
// tag.
type totalReshaped struct {
	Sum int64
	Who string `weir:"User"`
}

type userKeyV1 struct{ A string }

type userKeyV2 struct {
	A string
	B int32
}

// evolved is one version of the program's states.
type evolved[V any, UK comparable] struct {
	val  state.ValueState[V]
	ttl  state.ValueState[V]
	list state.ListState[V]
	mp   state.MapState[UK, V]
	sum  state.ReducingState[V]
}

func registerEvolved[V any, UK comparable](t *testing.T, b state.Backend[int]) (evolved[V, UK], error) {
	t.Helper()
	var s evolved[V, UK]
	var err error
	if s.val, err = state.RegisterValue(b, "val", mustCodec[V](t)); err != nil {
		return s, err
	}
	if s.ttl, err = state.RegisterValue(b, "ttl", mustCodec[V](t), state.WithTTL(state.TTLConfig{TTL: 1 << 40})); err != nil {
		return s, err
	}
	if s.list, err = state.RegisterList(b, "list", mustCodec[V](t)); err != nil {
		return s, err
	}
	if s.mp, err = state.RegisterMap(b, "map", mustCodec[UK](t), mustCodec[V](t)); err != nil {
		return s, err
	}
	first := func(a, _ V) V { return a }
	if s.sum, err = state.RegisterReducing(b, "sum", first, mustCodec[V](t)); err != nil {
		return s, err
	}
	return s, nil
}

type ttlClocked interface{ SetTTLClock(func() int64) }

const evolveKeys = 300

func v1Total(k int) totalV1 {
	return totalV1{User: fmt.Sprintf("u%d", k), Count: int64(k), Sum: int64(k * 7)}
}

// fillV1 writes every state of keys [0, evolveKeys) with version 1.
func fillV1(t *testing.T, f *fixture) {
	f.b.(ttlClocked).SetTTLClock(func() int64 { return 1000 })
	s, err := registerEvolved[totalV1, userKeyV1](t, f.b)
	if err != nil {
		t.Fatal(err)
	}
	for k := range evolveKeys {
		if !f.b.KeyGroups().Contains(f.kg(k)) {
			continue
		}
		f.set(k)
		v := v1Total(k)
		s.val.Update(v)
		s.ttl.Update(v)
		s.list.Add(v)
		s.list.Add(totalV1{User: "second"})
		s.mp.Put(userKeyV1{A: "a"}, v)
		s.mp.Put(userKeyV1{A: fmt.Sprint(k)}, v)
		s.sum.Add(v)
	}
}

// checkEvolved reads every key through version V and compares it with
// conv of what version 1 wrote.
func checkEvolved[V any, UK comparable](t *testing.T, f *fixture, conv func(totalV1) V, ukConv func(userKeyV1) UK) {
	t.Helper()
	f.b.(ttlClocked).SetTTLClock(func() int64 { return 2000 })
	s, err := registerEvolved[V, UK](t, f.b)
	if err != nil {
		t.Fatal(err)
	}
	for k := range evolveKeys {
		if !f.b.KeyGroups().Contains(f.kg(k)) {
			continue
		}
		f.set(k)
		want := conv(v1Total(k))
		for name, got := range map[string]func() (V, bool){"val": s.val.Value, "ttl": s.ttl.Value, "sum": s.sum.Get} {
			if v, ok := got(); !ok || !reflect.DeepEqual(v, want) {
				t.Fatalf("%s key %d: got %+v (%t), want %+v", name, k, v, ok, want)
			}
		}
		if got, want := s.list.Get(), []V{want, conv(totalV1{User: "second"})}; !reflect.DeepEqual(got, want) {
			t.Fatalf("list key %d: got %+v, want %+v", k, got, want)
		}
		for _, uk := range []userKeyV1{{A: "a"}, {A: fmt.Sprint(k)}} {
			if v, ok := s.mp.Get(ukConv(uk)); !ok || !reflect.DeepEqual(v, want) {
				t.Fatalf("map key %d user key %+v: got %+v (%t), want %+v", k, uk, v, ok, want)
			}
		}
	}
	if err := f.b.Err(); err != nil {
		t.Fatal(err)
	}
}

func addedField(v totalV1) totalAdded  { return totalAdded{User: v.User, Count: v.Count, Sum: v.Sum} }
func reshaped(v totalV1) totalReshaped { return totalReshaped{Sum: v.Sum, Who: v.User} }
func sameUK(u userKeyV1) userKeyV1     { return u }
func widerUK(u userKeyV1) userKeyV2    { return userKeyV2{A: u.A} }

// schemasOf returns a backend's state-table rows, as a checkpoint records
// them.
func schemasOf(t *testing.T, b state.Backend[int]) []checkpoint.StateSchema {
	t.Helper()
	h, ok := b.(interface {
		Schemas() []checkpoint.StateSchema
	})
	if !ok {
		t.Fatalf("%T has no Schemas", b)
	}
	return h.Schemas()
}

// evolveRestore restores a fresh fixture over kgs from a canonical
// snapshot with the given rows.
func evolveRestore(t *testing.T, mk func(testing.TB, keygroup.Range, ...func(*Options)) *fixture, kgs keygroup.Range, rows []checkpoint.StateSchema, srcs ...state.RestoreSource) *fixture {
	t.Helper()
	f := mk(t, kgs)
	if err := state.SetKeyedSchemas(f.b, rows); err != nil {
		t.Fatal(err)
	}
	if err := f.b.Restore(t.Context(), srcs); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestEvolutionRestoresChangedTypes(t *testing.T) {
	makers := map[string]func(testing.TB, keygroup.Range, ...func(*Options)) *fixture{"heap": heapMaker, "lsm": newLSM}
	for from, mkFrom := range makers {
		for to, mkTo := range makers {
			t.Run(from+"-to-"+to, func(t *testing.T) {
				f := mkFrom(t, fullRange)
				fillV1(t, f)
				src, rows := snapshotBytes(t, f.b), schemasOf(t, f.b)
				t.Run("added-field", func(t *testing.T) {
					checkEvolved(t, evolveRestore(t, mkTo, fullRange, rows, src), addedField, widerUK)
				})
				t.Run("dropped-moved-renamed", func(t *testing.T) {
					checkEvolved(t, evolveRestore(t, mkTo, fullRange, rows, src), reshaped, sameUK)
				})
				t.Run("rescaled-2-to-3", func(t *testing.T) {
					for i := range 3 {
						kgs := keygroup.RangeFor(testMaxP, 3, i)
						checkEvolved(t, evolveRestore(t, mkTo, kgs, rows, src), addedField, widerUK)
					}
				})
				t.Run("identical", func(t *testing.T) {
					checkEvolved(t, evolveRestore(t, mkTo, fullRange, rows, src), func(v totalV1) totalV1 { return v }, sameUK)
				})
				t.Run("migrated-once", func(t *testing.T) {
					// A migrated state's next snapshot is in the new
					// encoding and records the new schema: restoring it
					// again is the identical case.
					g := evolveRestore(t, mkTo, fullRange, rows, src)
					checkEvolved(t, g, addedField, widerUK)
					rows2 := schemasOf(t, g.b)
					want, _ := codec.SchemaFor[totalAdded]()
					for _, r := range rows2 {
						if r.Scope == checkpoint.ScopeKeyed && string(r.Value) != string(codec.AppendSchema(nil, want)) {
							t.Fatalf("row %q records %x, want the new schema", r.Name, r.Value)
						}
					}
					checkEvolved(t, evolveRestore(t, mkTo, fullRange, rows2, snapshotBytes(t, g.b)), func(v totalV1) totalAdded { return addedField(v) }, widerUK)
				})
			})
		}
	}
}

func TestEvolutionIncrementalRestoreMigratesLinkedFiles(t *testing.T) {
	fs := newStorage(t)
	var hs []*checkpoint.IncrementalKeyedStateHandle
	var rows []checkpoint.StateSchema
	for i := range 2 {
		f := newLSM(t, keygroup.RangeFor(testMaxP, 2, i))
		fillV1(t, f)
		hs = append(hs, incCheckpoint(t, f, fs, 1))
		rows = schemasOf(t, f.b)
	}
	for _, to := range []int{2, 3} {
		for i := range to {
			kgs := keygroup.RangeFor(testMaxP, to, i)
			g := newLSM(t, kgs)
			if err := state.SetKeyedSchemas(g.b, rows); err != nil {
				t.Fatal(err)
			}
			var srcs []IncrementalSource
			for _, h := range hs {
				srcs = append(srcs, IncrementalSource{Handle: h, Files: fs})
			}
			if _, err := g.b.(*Backend[int]).RestoreIncremental(t.Context(), srcs, true); err != nil {
				t.Fatal(err)
			}
			checkEvolved(t, g, addedField, widerUK)
			// The old entries are gone: a canonical snapshot holds exactly
			// the heap's, restored from the same state.
			h := newHeap(t, kgs)
			checkEvolvedSnapshotsEqual(t, g, h, hs, fs)
		}
	}
}

// checkEvolvedSnapshotsEqual compares g's canonical snapshot with that of
// heap h restored from g's snapshot: the store holds nothing but what its
// states read.
func checkEvolvedSnapshotsEqual(t *testing.T, g, h *fixture, _ []*checkpoint.IncrementalKeyedStateHandle, _ any) {
	t.Helper()
	src := snapshotBytes(t, g.b)
	if err := state.SetKeyedSchemas(h.b, schemasOf(t, g.b)); err != nil {
		t.Fatal(err)
	}
	if err := h.b.Restore(t.Context(), []state.RestoreSource{src}); err != nil {
		t.Fatal(err)
	}
	h.b.(ttlClocked).SetTTLClock(func() int64 { return 2000 })
	if _, err := registerEvolved[totalAdded, userKeyV2](t, h.b); err != nil {
		t.Fatal(err)
	}
	if a, b := snapshotBytes(t, h.b), src; !sameSource(a, b) {
		t.Fatal("canonical snapshot of the migrated store differs from the heap backend's of the same state")
	}
}

func TestEvolutionRefusesIncompatibleTypes(t *testing.T) {
	type narrowed struct {
		User  string
		Count int32
		Sum   int64
	}
	type kindChanged struct {
		User  int64
		Count int64
	}
	for _, mk := range []func(testing.TB, keygroup.Range, ...func(*Options)) *fixture{heapMaker, newLSM} {
		f := mk(t, fullRange)
		fillV1(t, f)
		src, rows := snapshotBytes(t, f.b), schemasOf(t, f.b)
		for name, register := range map[string]func(b state.Backend[int]) error{
			"narrowed": func(b state.Backend[int]) error {
				_, err := state.RegisterValue(b, "val", mustCodec[narrowed](t))
				return err
			},
			"kind": func(b state.Backend[int]) error {
				_, err := state.RegisterValue(b, "val", mustCodec[kindChanged](t))
				return err
			},
			"list-element": func(b state.Backend[int]) error {
				_, err := state.RegisterList(b, "list", mustCodec[string](t))
				return err
			},
		} {
			t.Run(f.name+"/"+name, func(t *testing.T) {
				g := evolveRestore(t, mk, fullRange, rows, src)
				err := register(g.b)
				if !errors.Is(err, codec.ErrIncompatible) {
					t.Fatalf("got %v, want an error wrapping codec.ErrIncompatible", err)
				}
				for _, part := range []string{`"`, "ways out", "cannot be read"} {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("error %q does not mention %q", err, part)
					}
				}
				t.Log(err)
			})
		}
	}
}

func TestEvolutionRefusesChangedKeyHash(t *testing.T) {
	f := newHeap(t, fullRange)
	fillV1(t, f)
	rows := schemasOf(t, f.b)
	// int to int32: same varint bytes, but negative keys hash elsewhere.
	b32 := state.NewKeyedBackend(mustCodec[int32](t), fullRange, testMaxP)
	if err := state.SetKeyedSchemas[int32](b32, rows); !errors.Is(err, codec.ErrIncompatible) || !strings.Contains(err.Error(), "hash") {
		t.Fatalf("int keys restored as int32: got %v, want an incompatible key hash", err)
	}
	bs := state.NewKeyedBackend(mustCodec[string](t), fullRange, testMaxP)
	if err := state.SetKeyedSchemas[string](bs, rows); !errors.Is(err, codec.ErrIncompatible) {
		t.Fatalf("int keys restored as string: got %v, want incompatible", err)
	}
	// A renamed key type with the same bytes and hash is fine.
	type userID int
	bu := state.NewKeyedBackend(mustCodec[userID](t), fullRange, testMaxP)
	if err := state.SetKeyedSchemas[userID](bu, rows); err != nil {
		t.Fatalf("int keys restored as a named int: %v", err)
	}
}

func TestEvolutionMigrationFunctions(t *testing.T) {
	type textCount struct {
		User  string
		Count string
	}
	toText := func(o totalV1) (textCount, error) { return textCount{User: o.User, Count: fmt.Sprint(o.Count)}, nil }
	for _, mk := range []func(testing.TB, keygroup.Range, ...func(*Options)) *fixture{heapMaker, newLSM} {
		f := mk(t, fullRange)
		fillV1(t, f)
		src, rows := snapshotBytes(t, f.b), schemasOf(t, f.b)
		t.Run(f.name+"/converts", func(t *testing.T) {
			g := evolveRestore(t, mk, fullRange, rows, src)
			s, err := state.RegisterValue(g.b, "val", mustCodec[textCount](t), state.WithMigration(state.NewMigration(toText)))
			if err != nil {
				t.Fatal(err)
			}
			for k := range evolveKeys {
				g.set(k)
				if v, ok := s.Value(); !ok || v != (textCount{User: fmt.Sprintf("u%d", k), Count: fmt.Sprint(k)}) {
					t.Fatalf("key %d: %+v %t", k, v, ok)
				}
			}
			if err := g.b.Err(); err != nil {
				t.Fatal(err)
			}
		})
		t.Run(f.name+"/wrong-type", func(t *testing.T) {
			g := evolveRestore(t, mk, fullRange, rows, src)
			_, err := state.RegisterValue(g.b, "val", mustCodec[totalAdded](t), state.WithMigration(state.NewMigration(toText)))
			if err == nil || !strings.Contains(err.Error(), "but the state holds") {
				t.Fatalf("got %v, want a migration type mismatch", err)
			}
		})
		t.Run(f.name+"/function-fails", func(t *testing.T) {
			g := evolveRestore(t, mk, fullRange, rows, src)
			failing := state.NewMigration(func(o totalV1) (textCount, error) {
				if o.Count == 42 {
					return textCount{}, errors.New("no answer")
				}
				return toText(o)
			})
			_, err := state.RegisterValue(g.b, "val", mustCodec[textCount](t), state.WithMigration(failing))
			if !errors.Is(err, state.ErrMigration) || !strings.Contains(err.Error(), "no answer") || errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("got %v, want a migration error (not corrupt) naming the function's error", err)
			}
		})
		t.Run(f.name+"/not-matching", func(t *testing.T) {
			g := evolveRestore(t, mk, fullRange, rows, src)
			type other struct{ User []int }
			m := state.NewMigration(func(o other) (textCount, error) { return textCount{}, nil })
			_, err := state.RegisterValue(g.b, "val", mustCodec[textCount](t), state.WithMigration(m))
			if !errors.Is(err, codec.ErrIncompatible) || !strings.Contains(err.Error(), "migration from") {
				t.Fatalf("got %v, want incompatible, saying why the migration did not apply", err)
			}
		})
	}
}

// TestEvolutionRefusesEveryIncompatibleKind: each kind of change a restore
// cannot read fails the registration, on both backends, as incompatible
// types (codec.ErrIncompatible) or as another kind of state
// (state.ErrStateMismatch), never as a silent reinterpretation.
func TestEvolutionRefusesEveryIncompatibleKind(t *testing.T) {
	type signed struct {
		User       string
		Count, Sum uint64
	}
	type arrayed struct {
		User  string
		Count [2]int64
	}
	for _, mk := range []func(testing.TB, keygroup.Range, ...func(*Options)) *fixture{heapMaker, newLSM} {
		f := mk(t, fullRange)
		fillV1(t, f)
		src, rows := snapshotBytes(t, f.b), schemasOf(t, f.b)
		for _, c := range []struct {
			name     string
			register func(b state.Backend[int]) error
			want     error
		}{
			{"sign", func(b state.Backend[int]) error {
				_, err := state.RegisterValue(b, "val", mustCodec[signed](t))
				return err
			}, codec.ErrIncompatible},
			{"array", func(b state.Backend[int]) error {
				_, err := state.RegisterValue(b, "val", mustCodec[arrayed](t))
				return err
			}, codec.ErrIncompatible},
			{"value-to-list", func(b state.Backend[int]) error {
				_, err := state.RegisterList(b, "val", mustCodec[totalV1](t))
				return err
			}, state.ErrStateMismatch},
			{"ttl-off", func(b state.Backend[int]) error {
				_, err := state.RegisterValue(b, "ttl", mustCodec[totalV1](t))
				return err
			}, state.ErrStateMismatch},
			{"ttl-on", func(b state.Backend[int]) error {
				b.(ttlClocked).SetTTLClock(func() int64 { return 1 })
				_, err := state.RegisterValue(b, "val", mustCodec[totalV1](t), state.WithTTL(state.TTLConfig{TTL: time.Hour}))
				return err
			}, state.ErrStateMismatch},
		} {
			t.Run(f.name+"/"+c.name, func(t *testing.T) {
				g := evolveRestore(t, mk, fullRange, rows, src)
				if err := c.register(g.b); !errors.Is(err, c.want) {
					t.Fatalf("got %v, want an error wrapping %v", err, c.want)
				}
			})
		}
	}
}
