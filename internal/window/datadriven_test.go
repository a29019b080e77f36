package window

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/weirstream/weir/internal/testutil/coretest"
)

// TestDataDriven runs the scripts in testdata. Commands:
//
//	assign kind=tumble|slide|session|global size=<ms> [slide=<ms>] [offset=<ms>] [domain=processing]
//	  one timestamp a line in the input; prints its windows
//	set                           a new empty MergingSet
//	add start=<ms> end=<ms>       MergingSet.Add; prints the Merge and the set
//	remove start=<ms> end=<ms>
//	encode                        AppendTo, then Decode into a new set; prints both
//	decode hex=<bytes>
//	rules <assign args> [lateness=<ms>] [trigger=event|processing|count:<n>[:purge]]
//	element start=<ms> end=<ms> wm=<ms> [count=<n>]   Rules.OnElement
//	timer start=<ms> end=<ms> domain=event|processing ts=<ms> [count=<n>]   Rules.OnTimer
//	sim <rules args>              a whole keyed window operator (sim_test.go)
//	run                           input lines: "e <key> <ts> [<value>]" (record i,
//	                              numbered from 0, value 1 by default), "wm <ms>",
//	                              "proc <ms>", "end" (watermark max); prints what it emitted
//	state                         what the operator keeps: contents, sets, timers
//
// Timestamps may be "min" or "max". Regenerate with
// go test ./internal/window -rewrite.
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var set *MergingSet
		var rules Rules
		var s *sim
		next := 0
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "assign":
				a, err := parseAssigner(t, d)
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				var b strings.Builder
				fmt.Fprintf(&b, "%s\n", a)
				for _, line := range strings.Fields(d.Input) {
					ws, err := a.AppendWindows(nil, coretest.TS(t, d, line))
					if err != nil {
						fmt.Fprintf(&b, "%s: error: %v\n", line, err)
						continue
					}
					fmt.Fprintf(&b, "%s:", line)
					for _, w := range ws {
						fmt.Fprintf(&b, " %v", w)
					}
					if len(ws) == 0 {
						b.WriteString(" (none)")
					}
					b.WriteString("\n")
				}
				return b.String()
			case "set":
				set = &MergingSet{}
				return describeSet(set)
			case "add":
				m := set.Add(scanWindow(t, d))
				var b strings.Builder
				fmt.Fprintf(&b, "result %v state %v", m.Result, m.StateWindow)
				if len(m.Windows) > 0 {
					fmt.Fprintf(&b, " merged %v", m.Windows)
					if len(m.StateWindows) > 0 {
						fmt.Fprintf(&b, " moving state of %v", m.StateWindows)
					}
				}
				b.WriteString("\n" + describeSet(set))
				return b.String()
			case "remove":
				ok := set.Remove(scanWindow(t, d))
				return fmt.Sprintf("removed=%t\n%s", ok, describeSet(set))
			case "encode":
				enc := set.AppendTo(nil)
				var got MergingSet
				if err := got.Decode(enc); err != nil {
					d.Fatalf(t, "decode own encoding: %v", err)
				}
				return fmt.Sprintf("%x\n%s", enc, describeSet(&got))
			case "decode":
				var h string
				d.ScanArgs(t, "hex", &h)
				b, err := hex.DecodeString(h)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				var got MergingSet
				got.Add(Window{0, 1}) // decode must replace what was there
				if err := got.Decode(b); err != nil {
					return fmt.Sprintf("error: %v\nlen=%d\n", err, got.Len())
				}
				return describeSet(&got)
			case "rules", "sim":
				r, err := parseRules(t, d)
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				rules = r
				if d.Cmd == "sim" {
					s, next = newSim(r), 0
				}
				return fmt.Sprintf("%s, %s, lateness %d\n", r.Assigner(), r.Trigger(), r.AllowedLateness())
			case "element":
				w := scanWindow(t, d)
				var wm, count int64
				wm = scanTS(t, d, "wm")
				if d.HasArg("count") {
					d.ScanArgs(t, "count", &count)
				}
				return describeDecision(rules.OnElement(w, count, wm))
			case "timer":
				w := scanWindow(t, d)
				var dom string
				var count int64
				d.ScanArgs(t, "domain", &dom)
				if d.HasArg("count") {
					d.ScanArgs(t, "count", &count)
				}
				tm := Timer{Domain: EventTime, TS: scanTS(t, d, "ts")}
				if dom == "processing" {
					tm.Domain = ProcessingTime
				}
				return describeDecision(rules.OnTimer(w, tm, count))
			case "run":
				s.out = s.out[:0]
				for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					f := strings.Fields(line)
					if len(f) == 0 {
						continue
					}
					switch {
					case f[0] == "e" && (len(f) == 3 || len(f) == 4):
						v := int64(1)
						if len(f) == 4 {
							v = coretest.TS(t, d, f[3])
						}
						if err := s.element(next, f[1], coretest.TS(t, d, f[2]), v); err != nil {
							s.emit("error: %v", err)
						}
						next++
					case f[0] == "wm" && len(f) == 2:
						s.advance(EventTime, coretest.TS(t, d, f[1]))
					case f[0] == "proc" && len(f) == 2:
						s.advance(ProcessingTime, coretest.TS(t, d, f[1]))
					case f[0] == "end":
						s.advance(EventTime, math.MaxInt64)
					default:
						d.Fatalf(t, "bad run line %q", line)
					}
				}
				if len(s.out) == 0 {
					return "(none)\n"
				}
				return strings.Join(s.out, "\n") + "\n"
			case "state":
				return s.state()
			}
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		})
	})
}

// scanTS reads the timestamp argument key=<ms|min|max>.
func scanTS(t *testing.T, d *datadriven.TestData, key string) int64 {
	var s string
	d.ScanArgs(t, key, &s)
	return coretest.TS(t, d, s)
}

// scanInt reads the optional argument key=<ms|min|max>, 0 without it.
func scanInt(t *testing.T, d *datadriven.TestData, key string) int64 {
	if !d.HasArg(key) {
		return 0
	}
	return scanTS(t, d, key)
}

func scanWindow(t *testing.T, d *datadriven.TestData) Window {
	return Window{Start: scanTS(t, d, "start"), End: scanTS(t, d, "end")}
}

func parseAssigner(t *testing.T, d *datadriven.TestData) (Assigner, error) {
	var kind, dom string
	d.ScanArgs(t, "kind", &kind)
	if d.HasArg("domain") {
		d.ScanArgs(t, "domain", &dom)
	}
	dm := EventTime
	if dom == "processing" {
		dm = ProcessingTime
	}
	size, slide, offset := scanInt(t, d, "size"), scanInt(t, d, "slide"), scanInt(t, d, "offset")
	switch kind {
	case "tumble":
		return NewTumbling(dm, size, offset)
	case "slide":
		return NewSliding(dm, size, slide, offset)
	case "session":
		return NewSession(dm, size)
	case "global":
		return NewGlobal(), nil
	}
	d.Fatalf(t, "unknown kind %q", kind)
	return Assigner{}, nil
}

func parseRules(t *testing.T, d *datadriven.TestData) (Rules, error) {
	a, err := parseAssigner(t, d)
	if err != nil {
		return Rules{}, err
	}
	var tr Trigger
	if d.HasArg("trigger") {
		var s string
		d.ScanArgs(t, "trigger", &s)
		f := strings.Split(s, ":")
		switch f[0] {
		case "event":
			tr = NewEventTimeTrigger()
		case "processing":
			tr = NewProcessingTimeTrigger()
		case "count":
			n, _ := strconv.ParseInt(f[1], 10, 64)
			if tr, err = NewCountTrigger(n, len(f) == 3 && f[2] == "purge"); err != nil {
				return Rules{}, err
			}
		default:
			d.Fatalf(t, "unknown trigger %q", s)
		}
	}
	return NewRules(a, tr, scanInt(t, d, "lateness"))
}

func describeSet(s *MergingSet) string {
	if s.Len() == 0 {
		return "set: (empty)\n"
	}
	var b strings.Builder
	b.WriteString("set:")
	for w, sw := range s.All() {
		if w == sw {
			fmt.Fprintf(&b, " %v", w)
		} else {
			fmt.Fprintf(&b, " %v(state %v)", w, sw)
		}
	}
	return b.String() + "\n"
}

func describeDecision(d Decision) string {
	var f []string
	for _, x := range []struct {
		on   bool
		name string
	}{{d.Skip, "skip"}, {d.Fire, "fire"}, {d.Purge, "purge"}, {d.Clear, "clear"}} {
		if x.on {
			f = append(f, x.name)
		}
	}
	f = append(f, fmt.Sprintf("count=%d", d.Count))
	for _, tm := range d.Register.T[:d.Register.N] {
		f = append(f, "register "+tm.String())
	}
	return strings.Join(f, " ") + "\n"
}
