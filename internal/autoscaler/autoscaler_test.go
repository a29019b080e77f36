package autoscaler

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/weirstream/weir/internal/testutil/coretest"
)

// t0 is the scripts' time zero: t=90s is t0 + 90 s.
var t0 = time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)

// TestScripts runs testdata/*.txt:
//
//	new [target=0.7] [boundary=0.3] [window=3m] [stabilization=1m] [catch-up=5m]
//	    [scale-down-interval=10m] [max-down=0.6] [max-up=0] [bp-limit=0.3]
//	<id> p=N [min=N] [max=N] [key-groups=N] [from=a,b]   (one line per vertex)
//	slots n=N
//	observe from=30s to=90s [every=10s]
//	<id> in=R out=R busy=F [bp=F] [lag=N | lag=A..B]       (per vertex; lag A..B grows linearly)
//	evaluate t=90s
//	rescaled t=95s
//	<id>=N …
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var s *Scaler
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "new":
				cfg := DefaultConfig()
				cfg.TargetUtilization = floatArg(t, d, "target", cfg.TargetUtilization)
				cfg.Boundary = floatArg(t, d, "boundary", cfg.Boundary)
				cfg.MetricsWindow = coretest.Dur(t, d, "window", cfg.MetricsWindow)
				cfg.Stabilization = coretest.Dur(t, d, "stabilization", cfg.Stabilization)
				cfg.CatchUp = coretest.Dur(t, d, "catch-up", cfg.CatchUp)
				cfg.ScaleDownInterval = coretest.Dur(t, d, "scale-down-interval", cfg.ScaleDownInterval)
				cfg.MaxScaleDown = floatArg(t, d, "max-down", cfg.MaxScaleDown)
				cfg.MaxScaleUp = floatArg(t, d, "max-up", cfg.MaxScaleUp)
				cfg.BackpressureLimit = floatArg(t, d, "bp-limit", cfg.BackpressureLimit)
				var vs []Vertex
				for _, line := range lines(d) {
					id, kv := parseLine(t, d, line)
					v := Vertex{ID: id, Parallelism: int(kv.num(t, d, "p", -1)), Min: int(kv.num(t, d, "min", 0)), Max: int(kv.num(t, d, "max", 0)), KeyGroups: int(kv.num(t, d, "key-groups", 0))}
					if f := kv["from"]; f != "" {
						v.Inputs = strings.Split(f, ",")
					}
					vs = append(vs, v)
				}
				var err error
				if s, err = New(cfg, vs, t0); err != nil {
					return "error: " + err.Error()
				}
				return "ok"
			case "slots":
				s.SetSlots(coretest.MustInt(t, d, "n"))
				return "ok"
			case "observe":
				from, to := coretest.MustDur(t, d, "from"), coretest.MustDur(t, d, "to")
				every := coretest.Dur(t, d, "every", 10*time.Second)
				steps := int((to - from) / every)
				for _, line := range lines(d) {
					id, kv := parseLine(t, d, line)
					lagFrom, lagTo := -1.0, -1.0
					if l := kv["lag"]; l != "" {
						a, b, ok := strings.Cut(l, "..")
						lagFrom = parseFloat(t, d, a)
						lagTo = lagFrom
						if ok {
							lagTo = parseFloat(t, d, b)
						}
					}
					for i := 0; i <= steps; i++ {
						frac := 0.0
						if steps > 0 {
							frac = float64(i) / float64(steps)
						}
						x := Sample{At: t0.Add(from + time.Duration(i)*every), InPerSec: kv.num(t, d, "in", -1), OutPerSec: kv.num(t, d, "out", -1),
							Busy: kv.num(t, d, "busy", -1), Backpressd: kv.num(t, d, "bp", 0), Lag: lagFrom + (lagTo-lagFrom)*frac}
						if err := s.Observe(id, x); err != nil {
							return "error: " + err.Error()
						}
					}
				}
				return "ok"
			case "evaluate":
				return format(s.Evaluate(t0.Add(coretest.MustDur(t, d, "t"))))
			case "rescaled":
				ps := map[string]int{}
				for _, line := range lines(d) {
					for _, f := range strings.Fields(line) {
						id, n, _ := strings.Cut(f, "=")
						ps[id] = int(parseFloat(t, d, n))
					}
				}
				if err := s.Rescaled(t0.Add(coretest.MustDur(t, d, "t")), ps); err != nil {
					return "error: " + err.Error()
				}
				return "ok"
			}
			d.Fatalf(t, "unknown command %s", d.Cmd)
			return ""
		})
	})
}

// format prints a decision: one line per vertex with what decided it.
func format(d Decision) string {
	var b strings.Builder
	if !d.Rescale {
		fmt.Fprintf(&b, "no rescale: %s\n", d.Reason)
	} else {
		b.WriteString("rescale\n")
	}
	for _, v := range d.Vertices {
		tr := "inf"
		if !math.IsInf(v.TruePerSubtask, 1) {
			tr = fmt.Sprintf("%.0f", v.TruePerSubtask)
		}
		fmt.Fprintf(&b, "  %s %d -> %d: in %.0f busy %.2f bp %.2f true %s target %.0f util %.2f: %s\n", v.ID, v.From, v.To, v.In, v.Busy, v.Backpressure, tr, v.Target, v.Utilization, v.Why)
	}
	return b.String()
}

func lines(d *datadriven.TestData) []string {
	var out []string
	for _, l := range strings.Split(d.Input, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

type kvs map[string]string

// num reads key as a number; def < 0 makes it required.
func (kv kvs) num(t *testing.T, d *datadriven.TestData, key string, def float64) float64 {
	t.Helper()
	s, ok := kv[key]
	if !ok {
		if def < 0 {
			d.Fatalf(t, "missing %s=", key)
		}
		return def
	}
	return parseFloat(t, d, s)
}

// parseLine reads "id k=v k=v".
func parseLine(t *testing.T, d *datadriven.TestData, line string) (string, kvs) {
	t.Helper()
	fs := strings.Fields(line)
	kv := kvs{}
	for _, f := range fs[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			d.Fatalf(t, "%q: want key=value", f)
		}
		kv[k] = v
	}
	return fs[0], kv
}

func floatArg(t *testing.T, d *datadriven.TestData, key string, def float64) float64 {
	t.Helper()
	if !d.HasArg(key) {
		return def
	}
	var s string
	d.ScanArgs(t, key, &s)
	return parseFloat(t, d, s)
}

func parseFloat(t *testing.T, d *datadriven.TestData, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		d.Fatalf(t, "%q: %v", s, err)
	}
	return f
}
