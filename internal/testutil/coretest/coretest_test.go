package coretest

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/weirstream/weir/internal/checkpoint"
)

// recorder is a testing.TB that records failures instead of reporting
// them; its Fatalf panics with itself so that a test can recover.
type recorder struct {
	testing.TB
	msgs   []string
	failed bool
}

func (r *recorder) Helper()      {}
func (r *recorder) Failed() bool { return r.failed }
func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	panic(r)
}

// fatal runs f and returns the message of the script failure it caused,
// "" if none.
func fatal(f func(t testing.TB)) (msg string) {
	r := &recorder{}
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
		msg = strings.Join(r.msgs, "; ")
	}()
	f(r)
	return ""
}

// cmd parses one script line into the TestData a handler would see.
func cmd(t *testing.T, line string) *datadriven.TestData {
	t.Helper()
	c, args, err := datadriven.ParseLine(line)
	if err != nil {
		t.Fatal(err)
	}
	return &datadriven.TestData{Pos: "x.txt:1", Cmd: c, CmdArgs: args}
}

func TestArgs(t *testing.T) {
	d := cmd(t, "new tasks=3 t=150ms err=(disk full) bad=soon")
	if got := Int(t, d, "tasks", 1); got != 3 {
		t.Errorf("Int(tasks) = %d, want 3", got)
	}
	if got := Int(t, d, "next", 7); got != 7 {
		t.Errorf("Int(next) without next= = %d, want the default 7", got)
	}
	if got := MustInt(t, d, "tasks"); got != 3 {
		t.Errorf("MustInt(tasks) = %d, want 3", got)
	}
	if got := Dur(t, d, "t", time.Second); got != 150*time.Millisecond {
		t.Errorf("Dur(t) = %v, want 150ms", got)
	}
	if got := Dur(t, d, "timeout", time.Second); got != time.Second {
		t.Errorf("Dur(timeout) without timeout= = %v, want the default 1s", got)
	}
	if err := Err(t, d, "err"); err == nil || err.Error() != "disk full" {
		t.Errorf("Err(err) = %v, want disk full", err)
	}
	if err := Err(t, d, "cause"); err != nil {
		t.Errorf("Err(cause) without cause= = %v, want nil", err)
	}
	for _, c := range []struct {
		name string
		f    func(t testing.TB)
		want string
	}{
		{"MustInt missing", func(t testing.TB) { MustInt(t, d, "id") }, "x.txt:1: missing id="},
		{"MustDur missing", func(t testing.TB) { MustDur(t, d, "at") }, "x.txt:1: missing at="},
		{"Dur malformed", func(t testing.TB) { Dur(t, d, "bad", 0) }, `x.txt:1: bad=soon: time: invalid duration "soon"`},
		{"Tasks missing", func(t testing.TB) { Tasks(t, d, "task", nil) }, "x.txt:1: missing task="},
		{"TS malformed", func(t testing.TB) { TS(t, d, "soon") }, `x.txt:1: bad timestamp "soon"`},
		{"Task malformed", func(t testing.TB) { Task(t, d, "1:2") }, `x.txt:1: task "1:2": want V/I or V`},
	} {
		if got := fatal(c.f); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: failure %q, want one starting %q", c.name, got, c.want)
		}
	}
}

func TestListAndTasks(t *testing.T) {
	all := []checkpoint.TaskID{{Vertex: 0}, {Vertex: 1}}
	for _, c := range []struct {
		line string
		want []checkpoint.TaskID
	}{
		{"ack task=1", []checkpoint.TaskID{{Vertex: 1}}},
		{"ack task=0,1/2", []checkpoint.TaskID{{Vertex: 0}, {Vertex: 1, Subtask: 2}}},
		{"ack task=(1,2)", []checkpoint.TaskID{{Vertex: 1}, {Vertex: 2}}},
		{"ack task=3/1 id=4 task=0/0,2/0", []checkpoint.TaskID{{Vertex: 3, Subtask: 1}, {Vertex: 0}, {Vertex: 2}}},
		{"ack task=all", all},
	} {
		if got := Tasks(t, cmd(t, c.line), "task", all); !slices.Equal(got, c.want) {
			t.Errorf("%s: Tasks = %v, want %v", c.line, got, c.want)
		}
	}
	if got := List(cmd(t, "ack id=4"), "task"); got != nil {
		t.Errorf("List without the argument = %q, want nil", got)
	}
	d := cmd(t, "ack task=all")
	if got := fatal(func(t testing.TB) { Tasks(t, d, "task", nil) }); !strings.Contains(got, `task "all": want V/I or V`) {
		t.Errorf("task=all without a list of all tasks: failure %q", got)
	}
	for _, s := range []string{"", "a", "1/", "/1", "1/x", "-1/0", "1/-2"} {
		if task, err := ParseTask(s); err == nil {
			t.Errorf("ParseTask(%q) = %v, want an error", s, task)
		}
	}
}

func TestTS(t *testing.T) {
	d := cmd(t, "wm")
	for s, want := range map[string]int64{"min": math.MinInt64, "max": math.MaxInt64, "-5": -5, "120": 120} {
		if got := TS(t, d, s); got != want {
			t.Errorf("TS(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestSeedsRun(t *testing.T) {
	var ran []uint64
	if n := (Seeds{First: 3, N: 4}).Run(t, func(seed uint64) { ran = append(ran, seed) }); n != 4 || !slices.Equal(ran, []uint64{3, 4, 5, 6}) {
		t.Errorf("Run ran %v and returned %d, want seeds 3..6 and 4", ran, n)
	}
	// A failing seed ends the run: the failure names it alone.
	r := &recorder{}
	ran = nil
	n := Seeds{N: 10}.Run(r, func(seed uint64) {
		ran = append(ran, seed)
		if seed == 2 {
			r.Errorf("seed %d: broken", seed)
		}
	})
	if n != 3 || !slices.Equal(ran, []uint64{0, 1, 2}) || !slices.Equal(r.msgs, []string{"seed 2: broken"}) {
		t.Errorf("after a failure at seed 2: ran %v, returned %d, failures %q", ran, n, r.msgs)
	}
}

func TestOutcomesRequire(t *testing.T) {
	r := &recorder{}
	Outcomes{"commit": 12, "abort": 3}.Require(r, 50, 10, "commit", "abort", "restart")
	want := []string{
		`outcome "abort" reached 3 times in 50 seeds, want at least 10: tune the random generator`,
		`outcome "restart" reached 0 times in 50 seeds, want at least 10: tune the random generator`,
	}
	if !slices.Equal(r.msgs, want) {
		t.Errorf("Require reported %q, want %q", r.msgs, want)
	}
	// After a failed run the counts are partial: nothing more to report.
	r = &recorder{failed: true}
	Outcomes{}.Require(r, 50, 10, "commit")
	if len(r.msgs) != 0 {
		t.Errorf("Require after a failure reported %q", r.msgs)
	}
}
