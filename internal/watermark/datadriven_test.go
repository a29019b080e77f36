package watermark

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestDataDriven runs the scripts in testdata. Commands:
//
//	new channels=<n>
//	wm ch=<c> ts=<ms>
//	idle ch=<c>
//	active ch=<c>
//	end ch=<c>
//
// Each event prints the actions Step returned, one a line ("(none)" for
// none), then the valve: its output, whether it is idle, and per channel
// its watermark and whether it is idle, unaligned or ended. Regenerate with
// go test ./internal/watermark -rewrite.
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if strings.HasPrefix(filepath.Base(path), "gen_") {
			return // the generation scripts: TestGenDataDriven
		}
		var v *Valve
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd == "new" {
				var n int
				d.ScanArgs(t, "channels", &n)
				v = NewValve(n)
				return describe(v)
			}
			if v == nil {
				d.Fatalf(t, "start the script with new")
			}
			var ch int
			d.ScanArgs(t, "ch", &ch)
			var ev Event
			switch d.Cmd {
			case "wm":
				var ts int64
				d.ScanArgs(t, "ts", &ts)
				ev = Advance{Ch: ch, TS: ts}
			case "idle":
				ev = Idle{Ch: ch}
			case "active":
				ev = Active{Ch: ch}
			case "end":
				ev = EndOfInput{Ch: ch}
			default:
				d.Fatalf(t, "unknown command %q", d.Cmd)
			}
			return actions(v.Step(ev)) + describe(v)
		})
	})
}

func ts(v int64) string {
	switch v {
	case MinWatermark:
		return "min"
	case MaxWatermark:
		return "max"
	}
	return fmt.Sprint(v)
}

func describe(v *Valve) string {
	var b strings.Builder
	fmt.Fprintf(&b, "out=%s", ts(v.Watermark()))
	if v.IsIdle() {
		b.WriteString(" idle")
	}
	b.WriteString(" |")
	for i, c := range v.chans {
		fmt.Fprintf(&b, " %d:%s", i, ts(c.wm))
		switch {
		case c.ended:
			b.WriteString("(ended)")
		case c.idle:
			b.WriteString("(idle)")
		case !c.aligned:
			b.WriteString("(behind)")
		}
	}
	return b.String() + "\n"
}
