package weak

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/weirstream/weir/internal/testutil/coretest"
)

// TestLogScripts runs testdata/log_*.txt. Commands:
//
//	new max=N                         NewLog(N)
//	data n=K                          Data(K): skip, dropped
//	event kind=wm|eod|eop             Event: logged, dropped
//	sent upto=I                       MarkSent(I)
//	truncate buffers=B records=R      Truncate: released or the error
//	reconnect buffers=B records=R     Reconnect: from, lost or the error
//	restart records=R                 Restart: ok or the error
//	resume records=R                  Resume: ok (and Pending) or the error
//	resumewith buffers=B records=R entries=3,wm,eod cursor=C
//	                                  ResumeWith: ok (Pending, Parked) or the error
//	show                              positions, held entries and counters
//
// Regenerate with: go test ./internal/weak -run LogScripts -rewrite
// (then read every changed line: the scripts are the specification).
func TestLogScripts(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "log_*.txt"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scripts in testdata/log_*.txt (%v)", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			var l *Log
			datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
				if d.Cmd != "new" && l == nil {
					d.Fatalf(t, "%s before new", d.Cmd)
				}
				return runLogCmd(t, d, &l)
			})
		})
	}
}

func runLogCmd(t *testing.T, d *datadriven.TestData, lp **Log) string {
	l := *lp
	switch d.Cmd {
	case "new":
		*lp = NewLog(coretest.MustInt(t, d, "max"))
		return showLog(*lp)
	case "data":
		skip, dropped := l.Data(coretest.MustInt(t, d, "n"))
		return fmt.Sprintf("skip=%d dropped=%d", skip, dropped)
	case "event":
		var kind string
		d.ScanArgs(t, "kind", &kind)
		e, ok := map[string]LogEvent{"wm": EventOther, "eod": EventEndOfData, "eop": EventEndOfPartition}[kind]
		if !ok {
			d.Fatalf(t, "kind=%s: want wm, eod or eop", kind)
		}
		logged, dropped := l.Event(e)
		return fmt.Sprintf("logged=%t dropped=%d", logged, dropped)
	case "sent":
		l.MarkSent(uint64(coretest.MustInt(t, d, "upto")))
		return fmt.Sprintf("sent=%d", l.Sent())
	case "truncate":
		released, err := l.Truncate(logPosArg(t, d))
		if err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("released=%d", released)
	case "reconnect":
		from, lost, err := l.Reconnect(logPosArg(t, d))
		if err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("from=%d lost=%d", from, lost)
	case "restart":
		if err := l.Restart(uint64(coretest.MustInt(t, d, "records"))); err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("cursor=%d", l.Cursor())
	case "resume":
		if err := l.Resume(uint64(coretest.MustInt(t, d, "records"))); err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("cursor=%d pending=%t", l.Cursor(), l.Pending())
	case "resumewith":
		var list string
		d.ScanArgs(t, "entries", &list)
		var entries []Entry
		for _, f := range strings.Split(list, ",") {
			switch f {
			case "wm":
				entries = append(entries, Entry{Event: EventOther})
			case "eod":
				entries = append(entries, Entry{Event: EventEndOfData})
			case "eop":
				entries = append(entries, Entry{Event: EventEndOfPartition})
			default:
				var n uint64
				if _, err := fmt.Sscan(f, &n); err != nil {
					d.Fatalf(t, "entries: %q is no record count or event", f)
				}
				entries = append(entries, Entry{Records: n})
			}
		}
		if err := l.ResumeWith(logPosArg(t, d), entries, uint64(coretest.MustInt(t, d, "cursor"))); err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("cursor=%d pending=%t parked=%t", l.Cursor(), l.Pending(), l.Parked())
	case "show":
		return showLog(l)
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return ""
}

// showLog prints the log's positions, its retained entries (index:records,
// or index:event) and its counters.
func showLog(l *Log) string {
	var b strings.Builder
	fmt.Fprintf(&b, "base=%d end=%d sent=%d records=%d held=%d cursor=%d eop=%t",
		l.Base(), l.End(), l.Sent(), l.Records(), l.Held(), l.Cursor(), l.EndOfPartition())
	if l.Pending() {
		b.WriteString(" pending")
	}
	b.WriteString("\n")
	b.WriteString("entries:")
	if len(l.entries) == 0 {
		b.WriteString(" (none)")
	}
	for k, x := range l.entries {
		i := l.base + 1 + uint64(k)
		switch x.event {
		case 0:
			fmt.Fprintf(&b, " %d:%d", i, x.records)
		case EventOther:
			fmt.Fprintf(&b, " %d:wm", i)
		case EventEndOfData:
			fmt.Fprintf(&b, " %d:eod", i)
		case EventEndOfPartition:
			fmt.Fprintf(&b, " %d:eop", i)
		case EventResumed:
			fmt.Fprintf(&b, " %d:resumed", i)
		}
	}
	c := l.Counters()
	fmt.Fprintf(&b, "\ncounters: replayed=%d lost=%d dropped=%d skipped=%d", c.Replayed, c.Lost, c.Dropped, c.Skipped)
	return b.String()
}

func logPosArg(t *testing.T, d *datadriven.TestData) Position {
	return Position{Buffers: uint64(coretest.MustInt(t, d, "buffers")), Records: uint64(coretest.MustInt(t, d, "records"))}
}

func TestNewLogKeepsAtLeastOneRecord(t *testing.T) {
	for _, max := range []int{-3, 0, 1} {
		l := NewLog(max)
		if skip, dropped := l.Data(5); skip != 0 || dropped != 0 {
			t.Fatalf("NewLog(%d).Data(5) = %d, %d; want 0, 0", max, skip, dropped)
		}
		if _, dropped := l.Data(2); dropped != 1 || l.Held() != 2 || l.Base() != 1 {
			t.Fatalf("NewLog(%d): second batch dropped %d entries, held %d, base %d; want 1, 2, 1", max, dropped, l.Held(), l.Base())
		}
	}
}
