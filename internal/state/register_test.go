package state

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/codec"
)

func TestRegisterSameNameReturnsSameState(t *testing.T) {
	f := newFixture(t, fullRange)
	f.register(t)
	v2, err := RegisterValue(f.b, "val", f.codes.i64)
	if err != nil {
		t.Fatal(err)
	}
	f.set(1)
	f.val.Update(8)
	if got, ok := v2.Value(); !ok || got != 8 {
		t.Fatalf("second registration sees %d, %v; want 8, true", got, ok)
	}
	if v2 != f.val {
		t.Fatal("second registration returned another state")
	}
}

func TestRegisterMismatch(t *testing.T) {
	f := newFixture(t, fullRange)
	f.register(t)
	check := func(err error, want string) {
		t.Helper()
		if !errors.Is(err, ErrStateMismatch) || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want ErrStateMismatch mentioning %q", err, want)
		}
	}
	_, err := RegisterList(f.b, "val", f.codes.i64)
	check(err, `"val"`)
	_, err = RegisterValue(f.b, "val", f.codes.str) // same kind, other type
	check(err, "value state of int64")
	_, err = RegisterMap(f.b, "map", f.codes.str, f.codes.i64)
	check(err, `"map"`)
	if _, err := RegisterValue(f.b, "", f.codes.i64); err == nil {
		t.Fatal("empty name accepted")
	}
}

func TestRestoredKindMismatch(t *testing.T) {
	f := newFixture(t, fullRange)
	f.register(t)
	applier{f, newModel()}.update(1, 1)
	src := snapshotBytes(t, f.b)

	g := newFixture(t, fullRange)
	if err := g.b.Restore(t.Context(), []RestoreSource{src}); err != nil {
		t.Fatal(err)
	}
	if _, err := RegisterList(g.b, "val", g.codes.i64); !errors.Is(err, ErrStateMismatch) {
		t.Fatalf("registering a restored value state as a list: err = %v, want ErrStateMismatch", err)
	}

	// Registered before Restore: the mismatch shows in Restore.
	h := newFixture(t, fullRange)
	if _, err := RegisterList(h.b, "val", h.codes.i64); err != nil {
		t.Fatal(err)
	}
	if err := h.b.Restore(t.Context(), []RestoreSource{src}); !errors.Is(err, ErrStateMismatch) || !strings.Contains(err.Error(), `"val"`) {
		t.Fatalf("Restore into a mismatched registration: err = %v", err)
	}
}

func TestRegisterBeforeRestore(t *testing.T) {
	f := newFixture(t, fullRange)
	f.register(t)
	m := newModel()
	populate(applier{f, m}, 50)
	src := snapshotBytes(t, f.b)
	g := newFixture(t, fullRange)
	g.register(t)
	if err := g.b.Restore(t.Context(), []RestoreSource{src}); err != nil {
		t.Fatal(err)
	}
	checkModel(t, "registered before restore", g.dump(60), m)
}

func TestUnregisteredStateIsReportedAndCarriedOver(t *testing.T) {
	f := newFixture(t, fullRange)
	f.register(t)
	m := newModel()
	populate(applier{f, m}, 50)
	src := snapshotBytes(t, f.b)

	// Restore, register only "val": the rest stays pending and is named.
	g := newFixture(t, fullRange)
	if err := g.b.Restore(t.Context(), []RestoreSource{src}); err != nil {
		t.Fatal(err)
	}
	if _, err := RegisterValue(g.b, "val", g.codes.i64); err != nil {
		t.Fatal(err)
	}
	if got, want := g.b.UnrestoredStates(), []string{"list", "map", "sum"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("UnrestoredStates = %v, want %v", got, want)
	}
	// A snapshot taken now still holds the pending states' bytes.
	h := restored(t, fullRange, snapshotBytes(t, g.b))
	checkModel(t, "carried over", h.dump(60), m)
}

func TestOperatorBackend(t *testing.T) {
	b := NewOperatorBackend()
	offs, err := RegisterOperatorList(b, "offsets", mustCodec[int64](t))
	if err != nil {
		t.Fatal(err)
	}
	txns, err := RegisterOperatorList(b, "txns", mustCodec[string](t))
	if err != nil {
		t.Fatal(err)
	}
	offs.Update([]int64{5, 7})
	offs.Add(9)
	txns.Add("t1")
	txns.Clear()
	txns.Add("t2")
	if again, err := RegisterOperatorList(b, "offsets", mustCodec[int64](t)); err != nil || again != offs {
		t.Fatalf("re-registration: %v, same=%v", err, again == offs)
	}
	if _, err := RegisterOperatorList(b, "offsets", mustCodec[string](t)); !errors.Is(err, ErrStateMismatch) {
		t.Fatalf("type mismatch: err = %v", err)
	}
	snap, err := b.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	offs.Add(100) // after the snapshot: not in it

	r := NewOperatorBackend()
	r.Restore(snap)
	offs2, err := RegisterOperatorList(r, "offsets", mustCodec[int64](t))
	if err != nil {
		t.Fatal(err)
	}
	if got := offs2.Get(); !reflect.DeepEqual(got, []int64{5, 7, 9}) {
		t.Fatalf("restored offsets %v, want [5 7 9]", got)
	}
	if got := r.UnrestoredStates(); !reflect.DeepEqual(got, []string{"txns"}) {
		t.Fatalf("UnrestoredStates = %v, want [txns]", got)
	}
	snap2, _ := r.Snapshot()
	if !reflect.DeepEqual(snap2["txns"], snap["txns"]) {
		t.Fatalf("unregistered list not carried over: %q", snap2["txns"])
	}

	bad := NewOperatorBackend()
	bad.Restore(map[string][][]byte{"offsets": {{0xff}}, "trail": {{2, 0}}})
	if _, err := RegisterOperatorList(bad, "offsets", mustCodec[int64](t)); !errors.Is(err, codec.ErrCorrupt) || !strings.Contains(err.Error(), `"offsets"`) {
		t.Fatalf("corrupt element: err = %v", err)
	}
	if _, err := RegisterOperatorList(bad, "trail", mustCodec[int64](t)); !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("trailing bytes: err = %v", err)
	}
}
