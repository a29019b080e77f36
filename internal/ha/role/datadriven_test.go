package role

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestScripts runs the scripts in testdata: each command is one event,
// and the output is the actions it produced and the state after it.
//
//	start | elected term=N | campaign-failed | retry-due | lease-lost term=N
//	term-stopped term=N | shutdown
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		m := New(Config{MinBackoff: 100 * time.Millisecond, MaxBackoff: 400 * time.Millisecond})
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			var ev Event
			term := func() int64 {
				var n int64
				d.ScanArgs(t, "term", &n)
				return n
			}
			switch d.Cmd {
			case "start":
				ev = Start{}
			case "elected":
				ev = Elected{Term: term()}
			case "campaign-failed":
				ev = CampaignFailed{Err: errors.New("etcd unreachable")}
			case "retry-due":
				ev = RetryDue{}
			case "lease-lost":
				ev = LeaseLost{Term: term()}
			case "term-stopped":
				ev = TermStopped{Term: term()}
			case "shutdown":
				ev = Shutdown{}
			default:
				d.Fatalf(t, "unknown command %q", d.Cmd)
			}
			var b strings.Builder
			for _, a := range m.Step(ev) {
				fmt.Fprintln(&b, a)
			}
			fmt.Fprintf(&b, "-> %s", m.State())
			if tm := m.Term(); tm != 0 {
				fmt.Fprintf(&b, " term=%d", tm)
			}
			return b.String()
		})
	})
}
