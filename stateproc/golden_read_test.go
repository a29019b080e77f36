package stateproc_test

import (
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/weirstream/weir/stateproc"
)

// TestReadListsAndMaps reads the list and map states of a committed golden
// savepoint (the keyed golden job of golden_test.go: numbers 0…399 keyed
// by v%23; per key the list holds the last two numbers as text, the map
// v%4 → "v<v>" of the last number with that remainder).
func TestReadListsAndMaps(t *testing.T) {
	ctx := t.Context()
	s, err := stateproc.Open(ctx, filepath.Join("..", "testdata", "golden", "heap-savepoint-v3", "savepoint", "chk-1"))
	if err != nil {
		t.Fatal(err)
	}
	wantLists, wantMaps := map[int64][]string{}, map[int64]map[int64]string{}
	for v := range int64(400) {
		k := v % 23
		l := append(wantLists[k], fmt.Sprint(v))
		if len(l) > 2 {
			l = l[1:]
		}
		wantLists[k] = l
		if wantMaps[k] == nil {
			wantMaps[k] = map[int64]string{}
		}
		wantMaps[k][v%4] = fmt.Sprint("v", v)
	}
	lists, err := stateproc.ReadLists[int64, string](ctx, s, "golden", "recent")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(lists, wantLists) {
		t.Errorf("lists = %v, want %v", lists, wantLists)
	}
	maps, err := stateproc.ReadMaps[int64, int64, string](ctx, s, "golden", "by-mod")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(maps, wantMaps) {
		t.Errorf("maps = %v, want %v", maps, wantMaps)
	}
	if _, err := stateproc.ReadLists[int64, int64](ctx, s, "golden", "recent"); err == nil {
		t.Error("reading a list of strings as int64 succeeded")
	}
}
