package weir

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/weirstream/weir/internal/keygroup"
)

// TestIntervalJoinDataDriven drives the interval join operator through
// testdata/interval_join*.txt. Commands:
//
//	open lower=<ms> upper=<ms>
//	a key=<k> ts=<ms> name=<s>     a record of the first input
//	b key=<k> ts=<ms> name=<s>     a record of the second input
//	watermark ts=<ms>
//	state key=<k>                  the records the join still holds
//
// Records and watermarks print what the operator emitted (name pairs with
// their timestamps, sorted: buckets are visited in map order) and the
// late-record count. Regenerate with go test -run TestIntervalJoinDataDriven . -rewrite.
func TestIntervalJoinDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if !strings.HasPrefix(baseName(path), "interval_join") {
			return
		}
		ctx := context.Background()
		var o *coProcessOp[int64, side, side, string]
		var f *intervalJoinFunc[int64, side, side, string]
		var out *linesOut
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd == "open" {
				if o != nil {
					o.Close(ctx)
				}
				var lower, upper int64
				d.ScanArgs(t, "lower", &lower)
				d.ScanArgs(t, "upper", &upper)
				o, f, out, _ = openIntervalJoin(t, lower, upper)
				return "ok\n"
			}
			if o == nil {
				d.Fatalf(t, "start the script with open")
			}
			var err error
			switch d.Cmd {
			case "a", "b":
				var key, ts int64
				var name string
				d.ScanArgs(t, "key", &key)
				d.ScanArgs(t, "ts", &ts)
				d.ScanArgs(t, "name", &name)
				if d.Cmd == "a" {
					err = o.Push1(ctx, []side{{key, name}}, []int64{ts})
				} else {
					err = o.Push2(ctx, []side{{key, name}}, []int64{ts})
				}
			case "watermark":
				var ts int64
				d.ScanArgs(t, "ts", &ts)
				_, err = o.ProcessWatermark(ctx, ts)
			case "state":
				var key int64
				d.ScanArgs(t, "key", &key)
				return describeJoinState(o, f, key)
			default:
				d.Fatalf(t, "unknown command %q", d.Cmd)
			}
			if err != nil {
				return fmt.Sprintf("error: %v\n", err)
			}
			var b strings.Builder
			slices.Sort(out.lines)
			for _, l := range out.lines {
				fmt.Fprintf(&b, "emit %s\n", l)
			}
			out.lines = nil
			fmt.Fprintf(&b, "late=%d\n", o.oc.LateRecordsDropped.Load())
			return b.String()
		})
		if o != nil {
			o.Close(ctx)
		}
	})
}

func baseName(path string) string { return path[strings.LastIndexByte(path, '/')+1:] }

// describeJoinState lists the records key k's buffers hold, by side and
// timestamp.
func describeJoinState(o *coProcessOp[int64, side, side, string], f *intervalJoinFunc[int64, side, side, string], k int64) string {
	o.backend.SetCurrentKey(k, keygroup.Of(o.hash(k), o.maxP))
	var lines []string
	for ts, xs := range f.left.All() {
		for _, x := range xs {
			lines = append(lines, fmt.Sprintf("a %d %s", ts, x.Name))
		}
	}
	for ts, ys := range f.right.All() {
		for _, y := range ys {
			lines = append(lines, fmt.Sprintf("b %d %s", ts, y.Name))
		}
	}
	if len(lines) == 0 {
		return "(empty)\n"
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}
