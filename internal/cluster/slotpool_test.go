package cluster

import (
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestSlotPool runs the scripts in testdata/slotpool. Commands:
//
//	offer tm=<id> slots=<n>             Offer; prints the pool
//	allocate job=<j> logical=(<l>,...)  Allocate; prints the placement or the shortage
//	lost tm=<id>                        Lost; prints the affected slots and the pool
//	release job=<j>                     Release; prints the pool
//	shortage job=<j> logical=(<l>,...) timeout=<d>  the waiting message and the final error
//
// Regenerate the expected output with go test -run TestSlotPool -rewrite.
func TestSlotPool(t *testing.T) {
	datadriven.Walk(t, "testdata/slotpool", func(t *testing.T, path string) {
		p := NewSlotPool()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			var tm, job string
			switch d.Cmd {
			case "offer":
				var n int
				d.ScanArgs(t, "tm", &tm)
				d.ScanArgs(t, "slots", &n)
				if err := p.Offer(tm, n); err != nil {
					return "error: " + err.Error()
				}
				return render(p)
			case "allocate":
				d.ScanArgs(t, "job", &job)
				logical := intList(t, d, "logical")
				got, ok := p.Allocate(job, logical)
				if !ok {
					if got != nil {
						t.Fatalf("%s: refused allocation returned %v", d.Pos, got)
					}
					return "no: " + p.Shortage(job, logical).String() + "\n" + render(p)
				}
				var b strings.Builder
				for _, l := range slices.Sorted(maps.Keys(got)) {
					fmt.Fprintf(&b, "%s/%d→%s ", job, l, got[l])
				}
				return strings.TrimSpace(b.String()) + "\n" + render(p)
			case "lost":
				d.ScanArgs(t, "tm", &tm)
				var b strings.Builder
				for _, js := range p.Lost(tm) {
					fmt.Fprintf(&b, "lost %s %v\n", js.Job, js.Logical)
				}
				return b.String() + render(p)
			case "release":
				d.ScanArgs(t, "job", &job)
				p.Release(job)
				return render(p)
			case "shortage":
				var timeout string
				d.ScanArgs(t, "job", &job)
				logical := intList(t, d, "logical")
				d.ScanArgs(t, "timeout", &timeout)
				to, err := time.ParseDuration(timeout)
				if err != nil {
					t.Fatal(err)
				}
				s := p.Shortage(job, logical)
				err = s.Err(to)
				if !errors.Is(err, ErrNotEnoughSlots) {
					t.Fatalf("%s: %v does not wrap ErrNotEnoughSlots", d.Pos, err)
				}
				return s.Waiting(to) + "\n" + err.Error()
			}
			t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
			return ""
		})
	})
}

func intList(t *testing.T, d *datadriven.TestData, key string) []int {
	for _, a := range d.CmdArgs {
		if a.Key != key {
			continue
		}
		out := make([]int, len(a.Vals))
		for i, v := range a.Vals {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("%s: %s: %v", d.Pos, key, err)
			}
			out[i] = n
		}
		return out
	}
	t.Fatalf("%s: missing %s", d.Pos, key)
	return nil
}

// render prints one line per TaskManager in registration order, each slot
// as job/logical or "-", and the free count.
func render(p *SlotPool) string {
	var b strings.Builder
	for _, t := range p.tms {
		fmt.Fprintf(&b, "%s:", t.id)
		for _, h := range t.slots {
			if h.job == "" {
				b.WriteString(" -")
			} else {
				fmt.Fprintf(&b, " %s/%d", h.job, h.logical)
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "free %d of %d", p.Free(), p.Total())
	return b.String()
}

// naivePool is the reference model: a flat list of physical slots in
// registration order, counted by scanning every time.
type naivePool struct {
	tms   []string // registration order
	slots []naiveSlot
}

type naiveSlot struct {
	tm      string
	idx     int
	job     string
	logical int
}

func (m *naivePool) offer(tm string, n int) bool {
	if n < 1 || slices.Contains(m.tms, tm) {
		return false
	}
	m.tms = append(m.tms, tm)
	for i := 0; i < n; i++ {
		m.slots = append(m.slots, naiveSlot{tm: tm, idx: i})
	}
	return true
}

func (m *naivePool) count(tm string) (used, total int) {
	for _, s := range m.slots {
		if s.tm == tm {
			total++
			if s.job != "" {
				used++
			}
		}
	}
	return
}

func (m *naivePool) holds(job string, l int) bool {
	return slices.ContainsFunc(m.slots, func(s naiveSlot) bool { return s.job == job && s.logical == l })
}

func (m *naivePool) allocate(job string, logical []int) (map[int]SlotRef, bool) {
	var need []int
	for _, l := range logical {
		if !m.holds(job, l) && !slices.Contains(need, l) {
			need = append(need, l)
		}
	}
	free := 0
	for _, s := range m.slots {
		if s.job == "" {
			free++
		}
	}
	if len(need) > free {
		return nil, false
	}
	slices.Sort(need)
	for _, l := range need {
		// The TaskManager with the smallest used/total, in floats; the first
		// one found wins ties since the scan goes in registration order.
		bestTM, bestShare := "", 2.0
		for _, tm := range m.tms {
			used, total := m.count(tm)
			if used < total && float64(used)/float64(total) < bestShare {
				bestTM, bestShare = tm, float64(used)/float64(total)
			}
		}
		for i, s := range m.slots {
			if s.tm == bestTM && s.job == "" {
				m.slots[i].job, m.slots[i].logical = job, l
				break
			}
		}
	}
	out := map[int]SlotRef{}
	for _, s := range m.slots {
		if s.job == job && slices.Contains(logical, s.logical) {
			out[s.logical] = SlotRef{TM: s.tm, Slot: s.idx}
		}
	}
	return out, true
}

func (m *naivePool) lost(tm string) []JobSlots {
	var out []JobSlots
	for _, s := range m.slots {
		if s.tm != tm || s.job == "" {
			continue
		}
		i := slices.IndexFunc(out, func(js JobSlots) bool { return js.Job == s.job })
		if i < 0 {
			out = append(out, JobSlots{Job: s.job})
			i = len(out) - 1
		}
		out[i].Logical = append(out[i].Logical, s.logical)
	}
	for i := range out {
		slices.Sort(out[i].Logical)
	}
	slices.SortFunc(out, func(a, b JobSlots) int { return strings.Compare(a.Job, b.Job) })
	m.slots = slices.DeleteFunc(m.slots, func(s naiveSlot) bool { return s.tm == tm })
	m.tms = slices.DeleteFunc(m.tms, func(t string) bool { return t == tm })
	return out
}

func (m *naivePool) release(job string) {
	for i := range m.slots {
		if m.slots[i].job == job {
			m.slots[i].job, m.slots[i].logical = "", 0
		}
	}
}

// TestSlotPoolModel compares the pool with the naive model over random
// offers, losses, allocations and releases, and checks the invariants on
// its own state: no physical slot held twice, no logical slot of a job
// placed twice, a refused allocation changes nothing.
func TestSlotPoolModel(t *testing.T) {
	const seed = 7
	rng := rand.New(rand.NewSource(seed))
	for run := 0; run < 300; run++ {
		p, m := NewSlotPool(), &naivePool{}
		nextTM := 0
		for step := 0; step < 100; step++ {
			where := fmt.Sprintf("seed %d run %d step %d", seed, run, step)
			job := fmt.Sprintf("job-%d", rng.Intn(3))
			switch op := rng.Intn(10); {
			case op < 3 && len(m.tms) < 6: // a few TaskManagers: shortages stay frequent
				tm := fmt.Sprintf("tm-%d", nextTM)
				if rng.Intn(10) == 0 && nextTM > 0 {
					tm = fmt.Sprintf("tm-%d", rng.Intn(nextTM)) // maybe registered still
				} else {
					nextTM++
				}
				n := rng.Intn(5)
				if got, want := p.Offer(tm, n) == nil, m.offer(tm, n); got != want {
					t.Fatalf("%s: Offer(%s, %d) accepted %v, model %v", where, tm, n, got, want)
				}
			case op < 4 && len(m.tms) > 0:
				tm := m.tms[rng.Intn(len(m.tms))]
				if got, want := p.Lost(tm), m.lost(tm); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("%s: Lost(%s) = %v, model %v", where, tm, got, want)
				}
			case op < 9:
				var logical []int
				for i, n := 0, 1+rng.Intn(8); i < n; i++ {
					logical = append(logical, rng.Intn(8))
				}
				before := flatten(p)
				got, ok := p.Allocate(job, logical)
				want, wantOK := m.allocate(job, logical)
				if ok != wantOK || !maps.Equal(got, want) {
					t.Fatalf("%s: Allocate(%s, %v) = %v %v, model %v %v\npool before: %v", where, job, logical, got, ok, want, wantOK, before)
				}
				if after := flatten(p); !ok && !slices.Equal(after, before) {
					t.Fatalf("%s: refused Allocate changed the pool: %v to %v", where, before, after)
				}
			default:
				p.Release(job)
				m.release(job)
			}
			checkPool(t, where, p, m)
		}
	}
}

func checkPool(t *testing.T, where string, p *SlotPool, m *naivePool) {
	t.Helper()
	type key struct {
		job     string
		logical int
	}
	free, placed := 0, map[key]SlotRef{}
	for _, tm := range p.tms {
		used := 0
		for i, h := range tm.slots {
			if h.job == "" {
				free++
				continue
			}
			used++
			k, ref := key{h.job, h.logical}, SlotRef{TM: tm.id, Slot: i}
			if prev, dup := placed[k]; dup {
				t.Fatalf("%s: %s/%d placed twice, on %s and %s", where, h.job, h.logical, prev, ref)
			}
			placed[k] = ref
			if r := p.jobs[h.job][h.logical]; r != ref {
				t.Fatalf("%s: %s/%d is on %s but the job's map says %s", where, h.job, h.logical, ref, r)
			}
		}
		if used != tm.used {
			t.Fatalf("%s: %s counts %d used, holds %d", where, tm.id, tm.used, used)
		}
	}
	n := 0
	for job := range p.jobs {
		n += len(p.jobs[job])
		if !maps.Equal(p.Slots(job), p.jobs[job]) {
			t.Fatalf("%s: Slots(%s) = %v, holds %v", where, job, p.Slots(job), p.jobs[job])
		}
	}
	if free != p.Free() || n != len(placed) {
		t.Fatalf("%s: Free() %d, counted %d; jobs map %d slots, placed %d", where, p.Free(), free, n, len(placed))
	}
	if got := flatten(p); !slices.Equal(got, m.slots) {
		t.Fatalf("%s: pool %v, model %v", where, got, m.slots)
	}
}

// flatten lists the pool's slots in the model's shape.
func flatten(p *SlotPool) []naiveSlot {
	var out []naiveSlot
	for _, tm := range p.tms {
		for i, h := range tm.slots {
			s := naiveSlot{tm: tm.id, idx: i, job: h.job}
			if h.job != "" {
				s.logical = h.logical
			}
			out = append(out, s)
		}
	}
	return out
}

// TestSlotPoolSpreadsEvenly: a job placed on an empty cluster of equal
// TaskManagers leaves their used counts at most one apart, whatever the
// sizes, and fills the earlier registered TaskManagers first.
func TestSlotPoolSpreadsEvenly(t *testing.T) {
	for tms := 1; tms <= 5; tms++ {
		for per := 1; per <= 4; per++ {
			for p := 1; p <= tms*per; p++ {
				pool := NewSlotPool()
				for i := 0; i < tms; i++ {
					if err := pool.Offer(fmt.Sprintf("tm-%d", i), per); err != nil {
						t.Fatal(err)
					}
				}
				logical := make([]int, p)
				for i := range logical {
					logical[i] = i
				}
				if _, ok := pool.Allocate("job", logical); !ok {
					t.Fatalf("%d TaskManagers × %d slots: %d slots refused", tms, per, p)
				}
				for i, s := range pool.TaskManagers() {
					used := s.Total - s.Free
					want := p / tms
					if i < p%tms {
						want++
					}
					if used != want {
						t.Fatalf("%d TaskManagers × %d slots, parallelism %d: %s uses %d, want %d", tms, per, p, s.TM, used, want)
					}
				}
			}
		}
	}
}

func TestSlotPoolRejectsBadOffers(t *testing.T) {
	p := NewSlotPool()
	for _, tc := range []struct {
		tm   string
		n    int
		want string
	}{
		{"tm-1", 0, "TaskManager tm-1 offers 0 slots: start it with --slots 1 or more (taskmanager.numberOfTaskSlots)"},
		{"", 1, "offer slots: empty TaskManager ResourceID"},
		{"tm-1", 2, ""},
		{"tm-1", 2, "TaskManager tm-1 offered slots twice: it registers once per session, and a returning TaskManager is first reported lost"},
	} {
		err := p.Offer(tc.tm, tc.n)
		if (err == nil) != (tc.want == "") || (err != nil && err.Error() != tc.want) {
			t.Fatalf("Offer(%q, %d) = %v, want %q", tc.tm, tc.n, err, tc.want)
		}
	}
	if p.Free() != 2 || p.Total() != 2 {
		t.Fatalf("free %d total %d after one good offer of 2", p.Free(), p.Total())
	}
}
