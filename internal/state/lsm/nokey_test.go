package lsm

import (
	"errors"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/state"
)

// TestWriteWithNoCurrentKey: before the first SetCurrentKey (the keyed
// function's Open) every write of every state kind is refused on both
// backends: Err names the state and wraps ErrNoCurrentKey, reads find
// nothing, and nothing lands under any key, the zero key included.
func TestWriteWithNoCurrentKey(t *testing.T) {
	writes := []struct {
		name, state string
		write       func(f *fixture)
	}{
		{"value Update", "val", func(f *fixture) { f.val.Update(5) }},
		{"value Clear", "val", func(f *fixture) { f.val.Clear() }},
		{"list Add", "list", func(f *fixture) { f.list.Add("a") }},
		{"list AddAll", "list", func(f *fixture) { f.list.AddAll([]string{"a", "b"}) }},
		{"list Update", "list", func(f *fixture) { f.list.Update([]string{"a"}) }},
		{"list Clear", "list", func(f *fixture) { f.list.Clear() }},
		{"map Put", "map", func(f *fixture) { f.mp.Put("a", 1) }},
		{"map Remove", "map", func(f *fixture) { f.mp.Remove("a") }},
		{"map Clear", "map", func(f *fixture) { f.mp.Clear() }},
		{"reducing Add", "sum", func(f *fixture) { f.sum.Add(3) }},
		{"reducing Clear", "sum", func(f *fixture) { f.sum.Clear() }},
	}
	for _, mk := range []func(*testing.T) *fixture{
		func(t *testing.T) *fixture { return newHeap(t, fullRange) },
		func(t *testing.T) *fixture { return newLSM(t, fullRange) },
	} {
		for _, w := range writes {
			f := mk(t)
			t.Run(f.name+"/"+w.name, func(t *testing.T) {
				f.register(t)
				if _, ok := f.val.Value(); ok {
					t.Fatal("Value with no current key found a value")
				}
				if got := f.list.Get(); got != nil {
					t.Fatalf("list Get with no current key = %v", got)
				}
				if f.mp.Len() != 0 || f.mp.Contains("a") {
					t.Fatal("the map with no current key has entries")
				}
				if err := f.b.Err(); err != nil {
					t.Fatalf("reads with no current key: Err = %v, want nil", err)
				}
				w.write(f)
				err := f.b.Err()
				if !errors.Is(err, state.ErrNoCurrentKey) || !strings.Contains(err.Error(), `state "`+w.state+`"`) {
					t.Fatalf("Err = %v, want ErrNoCurrentKey naming state %q", err, w.state)
				}
				if got := f.read(0); got.HasVal || got.List != nil || got.MapLen != 0 || got.HasSum {
					t.Fatalf("the zero key holds %+v after a refused write", got)
				}
			})
		}
	}
}
