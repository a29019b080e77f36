package watermark

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/weirstream/weir/internal/testutil/coretest"
)

// TestGenDataDriven runs the generation scripts testdata/gen_*.txt.
// Commands for a generator alone:
//
//	gen bound=<ms>          a Bounded generator (bound 0: Monotonous)
//	on ts=(<ms>,...)        OnEvent for each
//	emit                    OnPeriodicEmit
//
// and for a Source whose splits use Bounded generators:
//
//	new [bound=<ms>] [idle=<ms>] [floor=<ts|min|max>]
//	add split=<id>
//	finish split=<id>
//	records split=<id> ts=(<ms>,...)
//	max split=<id> ts=<ms>          RecordsMax
//	tick now=<ms>
//	end                              EndOfInput
//
// Source commands print the actions, one a line ("(none)" for none), then
// the output, "idle"/"ended" if so, and per split (sorted) its watermark
// and "(idle)" if idle. A panic prints "panic: <message>". Regenerate with
// go test ./internal/watermark -rewrite.
func TestGenDataDriven(t *testing.T) {
	paths, err := filepath.Glob("testdata/gen_*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no generation scripts: %v", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			var g *Bounded
			var s *Source
			datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) (out string) {
				defer func() {
					if r := recover(); r != nil {
						out = fmt.Sprintf("panic: %v\n", r)
					}
				}()
				switch d.Cmd {
				case "gen":
					var bound int64
					d.ScanArgs(t, "bound", &bound)
					g = BoundedOutOfOrderness(bound)
					return "ok\n"
				case "on":
					for _, v := range int64s(t, d, "ts") {
						g.OnEvent(v)
					}
					return "ok\n"
				case "emit":
					wm, ok := g.OnPeriodicEmit()
					if !ok {
						return "none\n"
					}
					return ts(wm) + "\n"
				case "new":
					var bound, idle int64
					d.MaybeScanArgs(t, "bound", &bound)
					d.MaybeScanArgs(t, "idle", &idle)
					floor := MinWatermark
					if d.HasArg("floor") {
						var f string
						d.ScanArgs(t, "floor", &f)
						floor = coretest.TS(t, d, f)
					}
					var err error
					s, err = NewSource(SourceConfig{
						NewGenerator: func() Generator { return BoundedOutOfOrderness(bound) },
						IdleTimeout:  time.Duration(idle) * time.Millisecond,
					}, floor)
					if err != nil {
						return "error: " + err.Error() + "\n"
					}
					return describeSource(s)
				}
				if s == nil {
					d.Fatalf(t, "start the script with new")
				}
				var acts []Action
				var id string
				if d.HasArg("split") {
					d.ScanArgs(t, "split", &id)
				}
				switch d.Cmd {
				case "add":
					s.AddSplit(id)
				case "finish":
					s.FinishSplit(id)
				case "records":
					acts = s.Records(id, int64s(t, d, "ts"))
				case "max":
					var v int64
					d.ScanArgs(t, "ts", &v)
					acts = s.RecordsMax(id, v)
				case "tick":
					var now int64
					d.ScanArgs(t, "now", &now)
					acts = s.Tick(now)
				case "end":
					acts = s.EndOfInput()
				default:
					d.Fatalf(t, "unknown command %q", d.Cmd)
				}
				return actions(acts) + describeSource(s)
			})
		})
	}
}

func int64s(t *testing.T, d *datadriven.TestData, key string) []int64 {
	arg, ok := d.Arg(key)
	if !ok {
		d.Fatalf(t, "missing %s", key)
	}
	var vs []int64
	for _, v := range arg.Vals {
		if v == "" {
			continue // ts=() is the empty batch
		}
		vs = append(vs, coretest.TS(t, d, v))
	}
	return vs
}

func actions(acts []Action) string {
	if len(acts) == 0 {
		return "(none)\n"
	}
	var b strings.Builder
	for _, a := range acts {
		switch a := a.(type) {
		case Emit:
			fmt.Fprintf(&b, "emit %s\n", ts(a.TS))
		case MarkIdle:
			b.WriteString("MarkIdle\n")
		case MarkActive:
			b.WriteString("MarkActive\n")
		}
	}
	return b.String()
}

func describeSource(s *Source) string {
	var b strings.Builder
	fmt.Fprintf(&b, "out=%s", ts(s.Watermark()))
	if s.IsIdle() {
		b.WriteString(" idle")
	}
	if s.Ended() {
		b.WriteString(" ended")
	}
	b.WriteString(" |")
	ids := make([]string, 0, len(s.splits))
	for id := range s.splits {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		sp := s.splits[id]
		fmt.Fprintf(&b, " %s:%s", id, ts(sp.wm))
		if sp.idle {
			b.WriteString("(idle)")
		}
	}
	return b.String() + "\n"
}
