package weak

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/weirstream/weir/internal/testutil/coretest"
)

// TestOutputScripts runs testdata/output_*.txt: the decisions of a
// producer's output channel around its log. Commands:
//
//	new max=N                    NewOutput(NewLog(N))
//	data n=K [live]              Data(K, live): the verdict
//	wm ts=T [live]               Event(EventOther, watermark T, live)
//	eod [live] | eop [live]      Event(EventEndOfData | EventEndOfPartition)
//	sent entry=I [stale] [err]   Sent(I, !stale, an error if err)
//	close                        Close()
//	nondet on|off                SetNondeterministic
//
// and every command of TestLogScripts on the output's log (restart,
// resume, reconnect, truncate, show, …).
//
// A verdict prints as its decision, then the non-zero parts: the wait's
// reason, entry and position (Hold, Send), skip, released, duplicated.
//
// Regenerate with: go test ./internal/weak -run OutputScripts -rewrite
// (then read every changed line: the scripts are the specification).
func TestOutputScripts(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "output_*.txt"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scripts in testdata/output_*.txt (%v)", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			var o *Output
			var l *Log
			datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
				if d.Cmd != "new" && o == nil {
					d.Fatalf(t, "%s before new", d.Cmd)
				}
				live := d.HasArg("live")
				switch d.Cmd {
				case "new":
					l = NewLog(coretest.MustInt(t, d, "max"))
					o = NewOutput(l)
					return showLog(l)
				case "data":
					return showVerdict(o.Data(coretest.MustInt(t, d, "n"), live))
				case "wm":
					return showVerdict(o.Event(EventOther, true, int64(coretest.MustInt(t, d, "ts")), live))
				case "eod":
					return showVerdict(o.Event(EventEndOfData, false, 0, live))
				case "eop":
					return showVerdict(o.Event(EventEndOfPartition, false, 0, live))
				case "sent":
					var err error
					if d.HasArg("err") {
						err = fmt.Errorf("consumer gone")
					}
					o.Sent(uint64(coretest.MustInt(t, d, "entry")), !d.HasArg("stale"), err)
					return fmt.Sprintf("sent=%d", l.Sent())
				case "close":
					o.Close()
					return fmt.Sprintf("closed=%t", o.Closed())
				case "nondet":
					if len(d.CmdArgs) != 1 || (d.CmdArgs[0].Key != "on" && d.CmdArgs[0].Key != "off") {
						d.Fatalf(t, "nondet on|off")
					}
					o.SetNondeterministic(d.CmdArgs[0].Key == "on")
					return "ok"
				}
				return runLogCmd(t, d, &l)
			})
		})
	}
}

func showVerdict(v Verdict) string {
	var b strings.Builder
	b.WriteString(v.Do.String())
	switch v.Why {
	case WaitPosition:
		b.WriteString(" (the consumer's position)")
	case WaitFull:
		b.WriteString(" (log full, no consumer)")
	}
	if v.Do == Hold || v.Do == Send {
		fmt.Fprintf(&b, " entry=%d at=%s", v.Entry, v.At)
	}
	for _, f := range []struct {
		name string
		n    int
	}{{"skip", v.Skip}, {"released", v.Released}, {"duplicated", v.Duplicated}} {
		if f.n != 0 {
			fmt.Fprintf(&b, " %s=%d", f.name, f.n)
		}
	}
	return b.String()
}
