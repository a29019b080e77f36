package stateread

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/state"
)

func row[K, V any](t *testing.T, scope, name string, kind state.Kind, userKey bool) *State {
	t.Helper()
	enc := func(s codec.Schema, err error) []byte {
		if err != nil {
			t.Fatal(err)
		}
		return codec.AppendSchema(nil, s)
	}
	r := checkpoint.StateSchema{Name: name, Scope: scope, Kind: uint8(kind), Key: enc(codec.SchemaFor[K]())}
	if scope != checkpoint.ScopeTimers {
		r.Value = enc(codec.SchemaFor[V]())
	}
	if userKey {
		r.UserKey = enc(codec.SchemaFor[string]())
	}
	s, err := knownState("op", r)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func split(t *testing.T, s *State, payload []byte) ([]Entry, error) {
	t.Helper()
	var out []Entry
	err := splitEntries(s, payload, func(e Entry) bool { out = append(out, e); return true }, errors.New("stop"))
	return out, err
}

func TestSplitEntries(t *testing.T) {
	str, _ := codec.For[string]()
	i64, _ := codec.For[int64]()
	uv := binary.AppendUvarint
	t.Run("list-ttl", func(t *testing.T) {
		s := row[string, int64](t, checkpoint.ScopeKeyed, "l", state.KindList|state.KindTTL, false)
		p := uv(nil, 2)
		p = str.Append(p, "a")
		p = uv(p, 2)
		p = i64.Append(binary.AppendVarint(p, 100), 7)
		p = i64.Append(binary.AppendVarint(p, -5), 8)
		p = str.Append(p, "b")
		p = uv(p, 0)
		es, err := split(t, s, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != 2 || string(es[0].Key) != "\x01a" || len(es[0].Elements) != 2 || !slices.Equal(es[0].Timestamps, []int64{100, -5}) || len(es[1].Elements) != 0 {
			t.Fatalf("%+v", es)
		}
		if _, n, _ := i64.Decode(es[0].Elements[1]); n != len(es[0].Elements[1]) {
			t.Fatalf("element %x", es[0].Elements[1])
		}
	})
	t.Run("map", func(t *testing.T) {
		s := row[int64, string](t, checkpoint.ScopeKeyed, "m", state.KindMap, true)
		p := i64.Append(uv(nil, 1), 3)
		p = uv(p, 2)
		p = str.Append(str.Append(p, "x"), "1")
		p = str.Append(str.Append(p, "yy"), "2")
		es, err := split(t, s, p)
		if err != nil || len(es) != 2 || string(es[1].UserKey) != "\x02yy" || string(es[1].Value) != "\x012" {
			t.Fatalf("%+v, %v", es, err)
		}
	})
	t.Run("timers", func(t *testing.T) {
		s := row[string, int64](t, checkpoint.ScopeTimers, "", state.KindEventTimers, false)
		p := str.Append(uv(nil, 1), "k")
		p = binary.AppendVarint(p, 1234)
		es, err := split(t, s, p)
		if err != nil || len(es) != 1 || es[0].Timestamp != 1234 || s.KindName() != "event-timer" {
			t.Fatalf("%+v, %v", es, err)
		}
	})
	t.Run("corrupt", func(t *testing.T) {
		s := row[string, int64](t, checkpoint.ScopeKeyed, "v", state.KindValue, false)
		good := i64.Append(str.Append(uv(nil, 1), "k"), 5)
		for name, p := range map[string][]byte{
			"truncated": good[:len(good)-1],
			"trailing":  append(slices.Clone(good), 0),
			"count":     uv(nil, 1<<40),
			"empty":     nil,
		} {
			if _, err := split(t, s, p); !errors.Is(err, codec.ErrCorrupt) {
				t.Errorf("%s: err = %v, want ErrCorrupt", name, err)
			}
		}
	})
	t.Run("row-without-schema", func(t *testing.T) {
		_, err := knownState("op", checkpoint.StateSchema{Name: "v", Scope: checkpoint.ScopeKeyed, Kind: uint8(state.KindValue)})
		if !errors.Is(err, codec.ErrCorrupt) {
			t.Fatalf("err = %v", err)
		}
	})
}

// entriesOf reads every entry of operator uid in c, as comparable text.
func entriesOf(t *testing.T, c *Checkpoint, uid string) []string {
	t.Helper()
	ops, err := c.Operators(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, op := range ops {
		if op.UID != uid {
			continue
		}
		for e, err := range c.Entries(t.Context(), op, func(*State) bool { return true }) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s/%s kg=%d key=%x uk=%x v=%x els=%x ts=%d %v raw=%x/%d", e.State.Name, e.State.KindName(), e.KeyGroup, e.Key, e.UserKey, e.Value, e.Elements, e.Timestamp, e.Timestamps, e.Raw, e.RawCount))
		}
	}
	return out
}

// TestIncrementalGoldens reads the keyed state of the committed
// incremental (lsm) goldens, whose stores it fetches and writes out as
// canonical files, and finds exactly the entries of the savepoint of the
// same job at the same point; the copies are gone afterwards.
func TestIncrementalGoldens(t *testing.T) {
	golden := func(name string, parts ...string) string {
		return filepath.Join(append([]string{"..", "..", "testdata", "golden", name}, parts...)...)
	}
	for _, c := range []struct {
		incremental, savepoint string
		uids                   []string
	}{
		{golden("lsm-incremental-v3", "golden", "chk-1"), golden("lsm-savepoint-v3", "savepoint"), []string{"golden"}},
		{golden("windows-lsm-incremental-v3", "golden", "chk-1"), golden("windows-heap-savepoint-v3", "savepoint"), []string{"tumbling", "session"}},
	} {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(c.incremental))), func(t *testing.T) {
			inc, err := Open(t.Context(), c.incremental)
			if err != nil {
				t.Fatal(err)
			}
			inc.TempDir = t.TempDir()
			sp, err := Open(t.Context(), c.savepoint)
			if err != nil {
				t.Fatal(err)
			}
			for _, uid := range c.uids {
				got, want := entriesOf(t, inc, uid), entriesOf(t, sp, uid)
				if len(want) < 23 || !slices.Equal(got, want) {
					t.Errorf("operator %s: %d entries from the incremental checkpoint, %d from the savepoint; they differ", uid, len(got), len(want))
				}
			}
			srcs, release, err := inc.KeyedSources(t.Context(), c.uids[0])
			if err != nil || len(srcs) != 2 {
				t.Fatalf("KeyedSources: %d sources, %v; want one per subtask", len(srcs), err)
			}
			if err := release(); err != nil {
				t.Fatal(err)
			}
			if ents, _ := os.ReadDir(inc.TempDir); len(ents) != 0 {
				t.Errorf("%d entries left in the temporary folder", len(ents))
			}
		})
	}
	t.Run("no-schemas", func(t *testing.T) {
		// Metadata v2: no state table; the stores' catalogues and timers
		// files name the states, whose payloads come raw.
		c, err := Open(t.Context(), golden("lsm-incremental-v2", "golden", "chk-1"))
		if err != nil {
			t.Fatal(err)
		}
		c.TempDir = t.TempDir()
		ops, err := c.Operators(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		counts := map[string]int{}
		for _, op := range ops {
			if op.UID != "golden" {
				continue
			}
			for _, s := range op.States {
				names = append(names, s.Name+"/"+s.KindName())
			}
			for e, err := range c.Entries(t.Context(), op, func(*State) bool { return true }) {
				if err != nil {
					t.Fatal(err)
				}
				counts[e.State.Name+"/"+e.State.KindName()] += e.RawCount
			}
		}
		wantNames := []string{"by-mod/map", "recent/list", "sum/reducing", "total/value", "/event-timer", "union/weir.event-time/operator-list"}
		if !slices.Equal(names, wantNames) {
			t.Errorf("states %v, want %v", names, wantNames)
		}
		for _, n := range wantNames[:5] {
			if counts[n] != 23 {
				t.Errorf("%s: %d keys, want the golden job's 23", n, counts[n])
			}
		}
	})
}
