package asyncqueue

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/weirstream/weir/internal/testutil/coretest"
)

// TestScripts runs testdata/*.txt: a queue driven by events, each command
// printing what Drain lets go after it. Commands:
//
//	new mode=ordered|unordered|ordered-per-key cap=N
//	add seq=S [key=K]        Add(S, K, "inS"); prints "full" instead when Full
//	complete seq=S,...       Complete(S, "rS") for each, in order
//	wm ts=T                  Watermark(T)
//	snapshot                 Snapshot(): seq/key of every queued record
//	restore mode=M cap=N     a new queue restored from the last snapshot
//	show                     Len, InFlight, Full, Empty
//
// Output lines: "emit S rS" for a result, "wm T" for a watermark.
//
// Regenerate with: go test ./internal/asyncqueue -run Scripts -rewrite
// (then read every changed line: the scripts are the specification).
func TestScripts(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scripts in testdata/*.txt (%v)", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			var q *Queue[string, string]
			var snap []Entry[string]
			var outs []Out[string]
			datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
				if q == nil && d.Cmd != "new" {
					d.Fatalf(t, "%s before new", d.Cmd)
				}
				var b strings.Builder
				switch d.Cmd {
				case "new", "restore":
					q = New[string, string](parseMode(t, d), coretest.MustInt(t, d, "cap"))
					if d.Cmd == "restore" {
						q.Restore(snap)
						fmt.Fprintf(&b, "restored %d\n", len(snap))
					}
				case "add":
					seq := uint64(coretest.MustInt(t, d, "seq"))
					if q.Full() {
						return fmt.Sprintf("full (%d of %d)\n", q.Len(), q.Cap())
					}
					q.Add(seq, uint64(coretest.Int(t, d, "key", 0)), "in"+strconv.FormatUint(seq, 10))
				case "complete":
					for _, s := range coretest.List(d, "seq") {
						seq, err := strconv.ParseUint(s, 10, 64)
						if err != nil {
							d.Fatalf(t, "seq=%s: %v", s, err)
						}
						q.Complete(seq, "r"+s)
					}
				case "wm":
					q.Watermark(int64(coretest.MustInt(t, d, "ts")))
				case "snapshot":
					snap = q.Snapshot(nil)
					for _, e := range snap {
						fmt.Fprintf(&b, "seq=%d key=%d %s\n", e.Seq, e.Key, e.Input)
					}
					if len(snap) == 0 {
						b.WriteString("(empty)\n")
					}
					return b.String()
				case "show":
					return fmt.Sprintf("len=%d in-flight=%d full=%v empty=%v\n", q.Len(), q.InFlight(), q.Full(), q.Empty())
				default:
					d.Fatalf(t, "unknown command %q", d.Cmd)
				}
				outs = q.Drain(outs[:0])
				for _, o := range outs {
					if o.IsWatermark {
						fmt.Fprintf(&b, "wm %d\n", o.Watermark)
					} else {
						fmt.Fprintf(&b, "emit %d %s\n", o.Seq, o.Result)
					}
				}
				if b.Len() == 0 {
					return "ok\n"
				}
				return b.String()
			})
		})
	}
}

func parseMode(t *testing.T, d *datadriven.TestData) Mode {
	var s string
	d.ScanArgs(t, "mode", &s)
	for _, m := range []Mode{Ordered, Unordered, OrderedPerKey} {
		if m.String() == s {
			return m
		}
	}
	d.Fatalf(t, "mode=%s: want ordered, unordered or ordered-per-key", s)
	return 0
}
