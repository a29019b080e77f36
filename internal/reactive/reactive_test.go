package reactive

import (
	"fmt"
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
//	new [stabilization=10s] [wait=30s] [min-increase=1] [retry=5s]
//	running t=0s p=N [min=N] [max=N]
//	slots t=0s n=N
//	tick t=0s
//	failed t=0s [err=...]
//	status
//
// Each step prints its actions, one a line ("none" for none).
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var m *Machine
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			at := func() time.Time { return t0.Add(coretest.MustDur(t, d, "t")) }
			var acts []Action
			switch d.Cmd {
			case "new":
				var err error
				m, err = New(Config{
					Stabilization: coretest.Dur(t, d, "stabilization", 10*time.Second),
					WaitTimeout:   coretest.Dur(t, d, "wait", 30*time.Second),
					MinIncrease:   coretest.Int(t, d, "min-increase", 1),
					RetryDelay:    coretest.Dur(t, d, "retry", 5*time.Second),
				})
				if err != nil {
					return "error: " + err.Error()
				}
				return "ok"
			case "running":
				acts = m.Step(at(), Running{Shape: Shape{Parallelism: coretest.MustInt(t, d, "p"), Min: coretest.Int(t, d, "min", 1), Max: coretest.Int(t, d, "max", 128)}})
			case "slots":
				acts = m.Step(at(), SlotsChanged{Total: coretest.MustInt(t, d, "n")})
			case "tick":
				acts = m.Step(at(), Tick{})
			case "failed":
				acts = m.Step(at(), RescaleFailed{Err: "refused"})
			case "status":
				s := m.Status()
				short := "-"
				if !s.ShortSince.IsZero() {
					short = s.ShortSince.Sub(t0).String()
				}
				return fmt.Sprintf("p=%d slots=%d min=%d max=%d pending=%d short-since=%s\nwaiting: %s", s.Parallelism, s.Slots, s.Min, s.Max, s.Pending, short, s.Waiting)
			default:
				t.Fatalf("unknown command %q", d.Cmd)
			}
			return format(acts)
		})
	})
}

func format(acts []Action) string {
	if len(acts) == 0 {
		return "none"
	}
	var b strings.Builder
	for _, a := range acts {
		switch a := a.(type) {
		case Rescale:
			kind := "up"
			if a.Down {
				kind = "down"
			}
			fmt.Fprintf(&b, "rescale %s %d -> %d (slots %d, min %d, max %d): %s\n", kind, a.From, a.To, a.Slots, a.Min, a.Max, a.Why)
		case Note:
			fmt.Fprintf(&b, "note: %s\n", a.Why)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{MinIncrease: 1}, ""},
		{Config{Stabilization: -1, MinIncrease: 1}, "resource-stabilization-timeout"},
		{Config{WaitTimeout: -1, MinIncrease: 1}, "resource-wait-timeout"},
		{Config{}, "min-parallelism-increase"},
	} {
		err := c.cfg.Validate()
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.cfg, err, c.want)
		}
	}
}
