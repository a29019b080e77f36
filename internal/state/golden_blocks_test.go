package state

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
)

var updateBlocks = flag.Bool("update-blocks-golden", false, "write testdata/blocks-v1.golden if it is missing (never overwrites)")

// blocksGolden is a keyed state file as a checkpoint holds it, with what
// it must restore to.
type blocksGolden struct {
	Data      []byte                      `json:"data"`
	KeyGroups []checkpoint.KeyGroupOffset `json:"keyGroups"`
	Want      *model                      `json:"want"`
}

// TestGoldenBlocks restores a keyed state file written by an earlier
// build — value, list, map and reducing state, processing-time and
// event-time timers, in the canonical block format version 1 — and
// compares every state and timer with what it held (docs/formats.md).
func TestGoldenBlocks(t *testing.T) {
	path := filepath.Join("testdata", "blocks-v1.golden")
	if *updateBlocks {
		if _, err := os.Stat(path); err == nil {
			t.Logf("%s exists: not overwritten", path)
		} else {
			f := newFixture(t, fullRange)
			f.register(t)
			a := applier{f, newModel()}
			for k := range 40 {
				a.update(k, int64(k*k-7))
				a.add(k, "a")
				a.add(k, string(rune('a'+k%26)))
				a.put(k, "x", k)
				a.put(k, "y", -k)
				a.reduce(k, int64(k))
				a.timer(k, int64(1_000+k))
				a.eventTimer(k, int64(5_000-k))
			}
			src := snapshotBytes(t, f.b)
			b, err := json.MarshalIndent(blocksGolden{Data: src.Data, KeyGroups: src.KeyGroups, Want: a.m}, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with -update-blocks-golden)", err)
	}
	var g blocksGolden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	src := BytesSource(path, g.Data, g.KeyGroups)
	got := restored(t, fullRange, src).dump(40)
	if !reflect.DeepEqual(got, g.Want) {
		t.Fatalf("%s restores to\n%+v\nwant\n%+v", path, got, g.Want)
	}
}
