package heartbeat

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/weirstream/weir/internal/testutil/coretest"
)

var t0 = time.Unix(1_000_000, 0)

// TestMonitor runs the scripts in testdata/. Times are offsets from an
// arbitrary origin. Commands:
//
//	new timeout=<d>         a fresh Monitor
//	seen peer=<p> at=<d>    Seen(p, at)
//	expired at=<d>          Expired(at): the peers lost, in order
//	next                    NextDeadline()
//	remove peer=<p>         Remove(p)
//	peers                   every tracked peer and its deadline
//
// Regenerate the expected output with go test -run TestMonitor -rewrite.
func TestMonitor(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var m *Monitor[string]
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			at := func() time.Time { return t0.Add(coretest.MustDur(t, d, "at")) }
			peer := func() string {
				var p string
				d.ScanArgs(t, "peer", &p)
				return p
			}
			if m == nil && d.Cmd != "new" {
				t.Fatalf("%s: start the script with new", d.Pos)
			}
			switch d.Cmd {
			case "new":
				m = NewMonitor[string](coretest.MustDur(t, d, "timeout"))
				return "ok"
			case "seen":
				m.Seen(peer(), at())
				return deadlines(m)
			case "expired":
				lost := m.Expired(at())
				if len(lost) == 0 {
					return "lost: none"
				}
				return "lost: " + strings.Join(lost, " ")
			case "next":
				if dl, ok := m.NextDeadline(); ok {
					return "next: " + dl.Sub(t0).String()
				}
				return "next: none"
			case "remove":
				m.Remove(peer())
				return deadlines(m)
			case "peers":
				return deadlines(m)
			}
			t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
			return ""
		})
	})
}

// deadlines prints every tracked peer's deadline, sorted by peer name.
func deadlines(m *Monitor[string]) string {
	var names []string
	for p := range m.peers {
		names = append(names, p)
	}
	if len(names) == 0 {
		return "no peers"
	}
	slices.Sort(names)
	var b strings.Builder
	for i, p := range names {
		dl, _ := m.Deadline(p)
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s@%s", p, dl.Sub(t0))
	}
	return b.String()
}

// TestMonitorModel drives a Monitor and a naive model (the last time each
// peer was seen, in a slice) through random operations with non-decreasing
// and occasionally stale times, and compares every answer.
func TestMonitorModel(t *testing.T) {
	const seed = 4242
	rng := rand.New(rand.NewSource(seed))
	type rec struct {
		peer string
		last time.Time
	}
	for run := 0; run < 200; run++ {
		timeout := time.Duration(1+rng.Intn(10)) * time.Second
		m := NewMonitor[string](timeout)
		var model []rec // in first-seen order
		now := t0
		for step := 0; step < 200; step++ {
			now = now.Add(time.Duration(rng.Intn(3000)) * time.Millisecond)
			p := fmt.Sprintf("tm-%d", rng.Intn(6))
			switch rng.Intn(4) {
			case 0, 1:
				at := now
				if rng.Intn(5) == 0 {
					at = now.Add(-time.Duration(rng.Intn(5000)) * time.Millisecond) // a stale report
				}
				m.Seen(p, at)
				i := slices.IndexFunc(model, func(r rec) bool { return r.peer == p })
				if i < 0 {
					model = append(model, rec{p, at})
				} else if at.After(model[i].last) {
					model[i].last = at
				}
			case 2:
				got := m.Expired(now)
				var want []rec
				model = slices.DeleteFunc(model, func(r rec) bool {
					if r.last.Add(timeout).After(now) {
						return false
					}
					want = append(want, r)
					return true
				})
				slices.SortStableFunc(want, func(a, b rec) int { return a.last.Compare(b.last) })
				var names []string
				for _, r := range want {
					names = append(names, r.peer)
				}
				if !slices.Equal(got, names) {
					t.Fatalf("seed %d run %d step %d: Expired = %v, model %v", seed, run, step, got, names)
				}
			case 3:
				m.Remove(p)
				model = slices.DeleteFunc(model, func(r rec) bool { return r.peer == p })
			}
			dl, ok := m.NextDeadline()
			if ok != (len(model) > 0) || m.Len() != len(model) {
				t.Fatalf("seed %d run %d step %d: NextDeadline ok=%v Len %d, model has %d peers", seed, run, step, ok, m.Len(), len(model))
			}
			for _, r := range model {
				if r.last.Add(timeout).Before(dl) {
					t.Fatalf("seed %d run %d step %d: NextDeadline %v after %s's deadline %v", seed, run, step, dl, r.peer, r.last.Add(timeout))
				}
			}
			if ok && !slices.ContainsFunc(model, func(r rec) bool { return r.last.Add(timeout).Equal(dl) }) {
				t.Fatalf("seed %d run %d step %d: NextDeadline %v is nobody's deadline", seed, run, step, dl)
			}
		}
	}
}

func TestNewMonitorPanicsOnZeroTimeout(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewMonitor(0) did not panic")
		}
	}()
	NewMonitor[string](0)
}
