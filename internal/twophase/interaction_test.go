package twophase

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/weirstream/weir/internal/checkpoint"
)

// TestInteraction runs the scripts in testdata/. Commands:
//
//	begin txn=<name>      open a transaction (prints a panic if one is open)
//	precommit id=<n>      pre-commit the open transaction for checkpoint n
//	complete id=<n>       notify-complete n; prints the handles to commit
//	state                 print the tracker's State
//	snapshot name=<s>     encode State and keep the bytes as checkpoint s
//	crash                 lose the tracker; a fresh one takes its place
//	restore from=<s>      decode checkpoint s and Restore it
//	abort                 task failure or close: print what to abort
//
// Regenerate the expected output with go test -run TestInteraction -rewrite.
func TestInteraction(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		tr := NewTracker[string]()
		snaps := map[string][]byte{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "begin":
				var txn string
				d.ScanArgs(t, "txn", &txn)
				return begin(tr, txn)
			case "precommit":
				var id int64
				d.ScanArgs(t, "id", &id)
				txn, err := tr.PreCommit(checkpoint.ID(id))
				if err != nil {
					return "error: " + err.Error()
				}
				return fmt.Sprintf("pre-commit %s", txn)
			case "complete":
				var id int64
				d.ScanArgs(t, "id", &id)
				var names []string
				for _, p := range tr.Complete(checkpoint.ID(id)) {
					names = append(names, fmt.Sprintf("%s@%d", p.Txn, p.ID))
				}
				return "commit: " + list(names)
			case "state":
				return formatState(tr.State())
			case "snapshot":
				var name string
				d.ScanArgs(t, "name", &name)
				b, err := EncodeState(tr.State(), stringCodec{})
				if err != nil {
					return "error: " + err.Error()
				}
				snaps[name] = b
				return formatState(tr.State())
			case "crash":
				tr = NewTracker[string]()
				return "fresh tracker"
			case "restore":
				var name string
				d.ScanArgs(t, "from", &name)
				b, ok := snaps[name]
				if !ok {
					t.Fatalf("%s: no snapshot %q", d.Pos, name)
				}
				s, err := DecodeState(b, stringCodec{})
				if err != nil {
					return "error: " + err.Error()
				}
				commit, abort := tr.Restore(s)
				return fmt.Sprintf("commit: %s\nabort: %s", list(commit), list(abort))
			case "abort":
				return "abort: " + list(tr.Abort())
			default:
				t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
				return ""
			}
		})
	})
}

func begin(tr *Tracker[string], txn string) (out string) {
	defer func() {
		if r := recover(); r != nil {
			out = fmt.Sprint("panic: ", r)
		}
	}()
	tr.Begin(txn)
	return "open " + txn
}

func formatState(s State[string]) string {
	var p []string
	for _, e := range s.Pending {
		p = append(p, fmt.Sprintf("%s@%d", e.Txn, e.ID))
	}
	cur := "none"
	if s.HasCurrent {
		cur = s.Current
	}
	return fmt.Sprintf("pending: %s\ncurrent: %s", list(p), cur)
}

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, " ")
}
