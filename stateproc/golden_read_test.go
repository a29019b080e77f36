package stateproc_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/stateproc"
)

// goldTotal is the first fields of the golden job's value state.
type goldTotal struct {
	User  string
	Count int64
}

func golden(parts ...string) string {
	return filepath.Join(append([]string{"..", "testdata", "golden"}, parts...)...)
}

// TestReadListsAndMaps reads the list and map states of committed golden
// checkpoints of the keyed golden job of golden_test.go (numbers 0…399
// keyed by v%23; per key the list holds the last two numbers as text, the
// map v%4 → "v<v>" of the last number with that remainder): a heap
// savepoint and an incremental lsm checkpoint, whose stores are copied
// into the temporary folder and removed again.
func TestReadListsAndMaps(t *testing.T) {
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
	for _, path := range []string{golden("heap-savepoint-v3", "savepoint", "chk-1"), golden("lsm-incremental-v3", "golden", "chk-1")} {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(path))), func(t *testing.T) {
			ctx := t.Context()
			tmp := t.TempDir()
			s, err := stateproc.Open(ctx, path, stateproc.TempDir(tmp))
			if err != nil {
				t.Fatal(err)
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
			// The golden's total has more fields: dropped ones are skipped.
			totals, err := stateproc.ReadValues[int64, goldTotal](ctx, s, "golden", "total")
			if err != nil || len(totals) != 23 || totals[5] != (goldTotal{User: "user-5", Count: 18}) {
				t.Errorf("totals = %v, %v; want 23 keys, key 5 = user-5 counted 18 times", totals, err)
			}
			if _, err := stateproc.ReadLists[int64, int64](ctx, s, "golden", "recent"); err == nil {
				t.Error("reading a list of strings as int64 succeeded")
			}
			if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
				t.Errorf("%d entries left in the temporary folder", len(ents))
			}
		})
	}
}

// TestKeepIncremental keeps the operators of the incremental lsm golden in
// a new savepoint: the keyed state of its stores is written as the very
// keyed files the runtime wrote for the savepoint of the same job at the
// same point (lsm-savepoint-v3), and the source position is carried.
func TestKeepIncremental(t *testing.T) {
	ctx := t.Context()
	s, err := stateproc.Open(ctx, golden("lsm-incremental-v3", "golden", "chk-1"), stateproc.TempDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	w := stateproc.NewWriter(128)
	if err := w.Keep(s, "numbers", "golden"); err != nil {
		t.Fatal(err)
	}
	path, err := w.Write(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got, gfs, err := storage.LoadPath(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	want, wfs, err := storage.LoadPath(ctx, golden("lsm-savepoint-v3", "savepoint"))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := got.Operator("numbers"), want.Operator("numbers"); !reflect.DeepEqual(g.Subtasks, w.Subtasks) {
		t.Errorf("source state %+v, want %+v", g.Subtasks, w.Subtasks)
	}
	g, wop := got.Operator("golden"), want.Operator("golden")
	if len(g.Subtasks) != 2 || !reflect.DeepEqual(g.States, wop.States) {
		t.Fatalf("kept operator: %d subtasks, state table equal: %t", len(g.Subtasks), reflect.DeepEqual(g.States, wop.States))
	}
	for i := range g.Subtasks {
		gs, ws := g.Subtasks[i].State, wop.Subtasks[i].State
		if gs.Incremental != nil || gs.Keyed == nil || !reflect.DeepEqual(gs.Keyed.KeyGroups, ws.Keyed.KeyGroups) || !reflect.DeepEqual(gs.Operator, ws.Operator) {
			t.Fatalf("subtask %d: %+v, want %+v", i, gs, ws)
		}
		if gb, wb := readAll(t, gfs, gs.Keyed.File), readAll(t, wfs, ws.Keyed.File); !bytes.Equal(gb, wb) {
			t.Errorf("subtask %d: keyed file of %d bytes differs from the runtime's savepoint's (%d bytes)", i, len(gb), len(wb))
		}
	}
}

func readAll(t *testing.T, fs *storage.FS, f checkpoint.StateFile) []byte {
	t.Helper()
	r, err := fs.OpenFile(t.Context(), f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
