package weir_test

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
)

var joinSeed = flag.Int64("seed", 0, "run the random join tests with this seed only (0: a fixed set of seeds; a failure prints its seed)")

// joinRec is a record of either side of the random join tests: its index
// on its side, its key and its event time.
type joinRec struct {
	I, Key, TS int64
}

// joinInput describes one side of a random join input: record i is a
// pure function of (seed, side, i), as the datagen source needs.
type joinInput struct {
	seed     int64
	side     int64
	n        int64
	keys     int64
	spacing  int64   // ms between consecutive indexes
	disorder int64   // max ms a record is early of its slot (out-of-orderness)
	rate     float64 // records per second, 0: as fast as possible
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func (in joinInput) at(i int64) joinRec {
	h := splitmix(uint64(in.seed)*31 + uint64(in.side)*1_000_003 + uint64(i))
	key := int64(h % uint64(in.keys))
	d := int64((h >> 20) % uint64(in.disorder+1))
	return joinRec{I: i, Key: key, TS: i*in.spacing + in.disorder - d}
}

func (in joinInput) all() []joinRec {
	out := make([]joinRec, in.n)
	for i := range out {
		out[i] = in.at(int64(i))
	}
	return out
}

// source adds the side's timed source: bounded out-of-orderness equal to
// the disorder, so no record is ever late and the join's output is a pure
// function of the input.
func (in joinInput) source(env *weir.Env, uid string) weir.Keyed[int64, joinRec] {
	strategy := weir.ForBoundedOutOfOrderness[joinRec](time.Duration(in.disorder) * time.Millisecond).
		WithTimestampAssigner(func(r joinRec, _ int64) int64 { return r.TS })
	s := weir.FromSourceWithWatermarks(env, datagen.New(in.at, datagen.WithCount(in.n), datagen.WithRate(in.rate)), strategy).Name(uid).UID(uid)
	return weir.KeyBy(s, func(r joinRec) int64 { return r.Key })
}

func pairLine(x, y joinRec) string { return fmt.Sprintf("%d,%d", x.I, y.I) }

// withTimestamps appends each joined line's event timestamp, read by a
// keyed process after the join.
func withTimestamps(s weir.Stream[string]) weir.Stream[string] {
	return weir.Process(weir.KeyBy(s, func(string) int64 { return 0 }), func() weir.KeyedProcessFunction[int64, string, string] {
		return stampFunc{}
	}).UID("stamp")
}

type stampFunc struct{}

func (stampFunc) Open(context.Context, *weir.KeyedContext[int64]) error { return nil }
func (stampFunc) ProcessElement(v string, kc *weir.KeyedContext[int64], out *weir.Collector[string]) error {
	ts, ok := kc.Timestamp()
	if !ok {
		return fmt.Errorf("joined record %q has no timestamp", v)
	}
	out.Collect(fmt.Sprintf("%s@%d", v, ts))
	return nil
}

// refInterval is the nested-loop interval join: every pair of equal keys
// with y.ts in [x.ts+lower, x.ts+upper], stamped max(x.ts, y.ts).
func refInterval(as, bs []joinRec, lower, upper int64) []string {
	var out []string
	for _, x := range as {
		for _, y := range bs {
			if x.Key == y.Key && y.TS >= x.TS+lower && y.TS <= x.TS+upper {
				out = append(out, fmt.Sprintf("%s@%d", pairLine(x, y), max(x.TS, y.TS)))
			}
		}
	}
	return out
}

// refWindow is the nested-loop window join: for every pair of equal keys,
// one line per window holding both (tumble and slide: count the window
// starts; session: the sessions of the key over both sides' timestamps).
func refWindow(kind string, size, slide int64, as, bs []joinRec) []string {
	var out []string
	sessions := map[int64][]int64{} // key -> sorted timestamps of both sides
	if kind == "session" {
		for _, r := range append(append([]joinRec{}, as...), bs...) {
			sessions[r.Key] = append(sessions[r.Key], r.TS)
		}
		for _, ts := range sessions {
			sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		}
	}
	// sessionOf numbers the session of ts among its key's timestamps: a
	// new one starts after each gap of more than size.
	sessionOf := func(key, ts int64) int {
		n := 0
		all := sessions[key]
		for i, t := range all {
			if i > 0 && t-all[i-1] > size {
				n++
			}
			if t == ts {
				return n
			}
		}
		panic("timestamp not found")
	}
	for _, x := range as {
		for _, y := range bs {
			if x.Key != y.Key {
				continue
			}
			windows := 0
			lo, hi := min(x.TS, y.TS), max(x.TS, y.TS)
			switch kind {
			case "tumble":
				if x.TS/size == y.TS/size {
					windows = 1
				}
			case "slide":
				for s := hi - hi%slide; s > hi-size; s -= slide {
					if s <= lo {
						windows++
					}
				}
			case "session":
				if sessionOf(x.Key, x.TS) == sessionOf(y.Key, y.TS) {
					windows = 1
				}
			}
			for range windows {
				out = append(out, pairLine(x, y))
			}
		}
	}
	return out
}

func joinSeeds() []int64 {
	if *joinSeed != 0 {
		return []int64{*joinSeed}
	}
	return []int64{1, 2}
}

// TestIntervalJoinRandom runs the interval join on random keyed inputs
// with bounded disorder against the nested-loop reference: the exact
// multiset of pairs and their timestamps, at parallelism 1 and 2, with
// failures injected at every fault point, and over remote channels with
// unaligned checkpoints (channel state of both input types).
func TestIntervalJoinRandom(t *testing.T) {
	cases := []struct {
		name         string
		p            int
		failures     int
		lower, upper int64
		extra        []string
	}{
		{name: "p1", p: 1, lower: -20, upper: 30},
		{name: "p2", p: 2, lower: 0, upper: 0},
		{name: "p2-failures", p: 2, failures: 3, lower: -40, upper: -5},
		{name: "p2-remote-unaligned-failures", p: 2, failures: 2, lower: 5, upper: 25,
			extra: []string{config.LocalTaskManagers, "2", config.CheckpointingUnaligned, "true", config.BatchSize, "16"}},
		{name: "p2-lsm-failures", p: 2, failures: 2, lower: -15, upper: 15, extra: []string{config.StateBackendType, config.BackendLSM}},
	}
	for _, seed := range joinSeeds() {
		for _, c := range cases {
			t.Run(fmt.Sprintf("seed%d/%s", seed, c.name), func(t *testing.T) {
				a := joinInput{seed: seed, side: 0, n: 1500, keys: 11, spacing: 1, disorder: 40}
				b := joinInput{seed: seed, side: 1, n: 1200, keys: 11, spacing: 1, disorder: 25}
				want := refInterval(a.all(), b.all(), c.lower, c.upper)
				env, log := newEnv(testConfig(t, c.p, "10ms", c.extra...))
				var inj *faults.Injector
				if c.failures > 0 {
					// Slow enough for checkpoints to complete between the
					// failures, so restores start from restored join state.
					a.rate, b.rate = 4000, 3000
					inj = injector(env, c.failures, seed, a.n, faults.AllPoints()...)
				}
				ms := time.Millisecond
				joined := weir.IntervalJoin(a.source(env, "a"), b.source(env, "b"), time.Duration(c.lower)*ms, time.Duration(c.upper)*ms, pairLine).UID("join")
				out := sinkLines(t, withTimestamps(joined))
				execute(t, env, log)
				if inj != nil && inj.Fired() != c.failures {
					t.Errorf("%d of %d failures fired", inj.Fired(), c.failures)
				}
				st := hooks.Plan(env).Status
				t.Logf("%d restarts, %d checkpoints", st.Restarts.Load(), st.CompletedCheckpoints.Load())
				if len(want) == 0 {
					t.Fatal("the reference joins nothing: the test would prove nothing")
				}
				sameMultisetSeed(t, seed, want, committed(t, out))
			})
		}
	}
}

// TestJoinWindowRandom runs the window join (tumbling, sliding, session)
// on random keyed inputs against the nested-loop reference: exact
// multisets at parallelism 1 and 2, one case with injected failures.
func TestJoinWindowRandom(t *testing.T) {
	cases := []struct {
		kind        string
		size, slide int64
		p, failures int
		extra       []string
	}{
		{kind: "tumble", size: 50, p: 1},
		{kind: "tumble", size: 50, p: 2, failures: 3},
		{kind: "slide", size: 60, slide: 20, p: 2},
		{kind: "session", size: 12, p: 1},
		{kind: "session", size: 12, p: 2, failures: 2},
		{kind: "slide", size: 60, slide: 20, p: 2, failures: 2, extra: []string{config.StateBackendType, config.BackendLSM}},
	}
	for _, seed := range joinSeeds() {
		for _, c := range cases {
			t.Run(fmt.Sprintf("seed%d/%s/p%d/failures%d/%d", seed, c.kind, c.p, c.failures, len(c.extra)), func(t *testing.T) {
				a := joinInput{seed: seed, side: 0, n: 1200, keys: 13, spacing: 1, disorder: 30}
				b := joinInput{seed: seed, side: 1, n: 1000, keys: 13, spacing: 1, disorder: 10}
				want := refWindow(c.kind, c.size, c.slide, a.all(), b.all())
				env, log := newEnv(testConfig(t, c.p, "10ms", c.extra...))
				var inj *faults.Injector
				if c.failures > 0 {
					// Slow enough for checkpoints to complete between the
					// failures, so restores start from restored join state.
					a.rate, b.rate = 4000, 3000
					inj = injector(env, c.failures, seed, a.n, faults.AllPoints()...)
				}
				ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
				assigner := weir.TumblingEventTimeWindows(ms(c.size))
				switch c.kind {
				case "slide":
					assigner = weir.SlidingEventTimeWindows(ms(c.size), ms(c.slide))
				case "session":
					assigner = weir.EventTimeSessionWindows(ms(c.size))
				}
				joined := weir.JoinWindow(a.source(env, "a"), b.source(env, "b"), assigner, pairLine).UID("join")
				out := sinkLines(t, joined)
				execute(t, env, log)
				if inj != nil && inj.Fired() != c.failures {
					t.Errorf("%d of %d failures fired", inj.Fired(), c.failures)
				}
				st := hooks.Plan(env).Status
				t.Logf("%d restarts, %d checkpoints", st.Restarts.Load(), st.CompletedCheckpoints.Load())
				if len(want) == 0 {
					t.Fatal("the reference joins nothing: the test would prove nothing")
				}
				sameMultisetSeed(t, seed, want, committed(t, out))
			})
		}
	}
}

func sameMultisetSeed(t *testing.T, seed int64, want, got []string) {
	t.Helper()
	t.Logf("seed %d: %d lines", seed, len(want))
	sameMultiset(t, want, got)
}

// TestJoinUntimedInputFails: event-time joins on an input without
// timestamps, and an interval with lower > upper, fail when the job is
// built, naming the fix.
func TestJoinUntimedInputFails(t *testing.T) {
	in := joinInput{seed: 1, n: 10, keys: 2, spacing: 1, disorder: 1}
	cases := map[string]struct {
		build func(env *weir.Env)
		want  string
		fix   string
	}{
		"interval-untimed": {func(env *weir.Env) {
			plain := weir.KeyBy(weir.FromSource(env, datagen.New(in.at, datagen.WithCount(in.n))).Name("plain").UID("plain"), func(r joinRec) int64 { return r.Key })
			sinkInto(weir.IntervalJoin(in.source(env, "a"), plain, 0, time.Millisecond, pairLine), t.TempDir())
		}, `IntervalJoin: input "plain" carries no timestamps`, "add a WatermarkStrategy upstream"},
		"window-untimed": {func(env *weir.Env) {
			plain := weir.KeyBy(weir.FromSource(env, datagen.New(in.at, datagen.WithCount(in.n))).Name("plain").UID("plain"), func(r joinRec) int64 { return r.Key })
			sinkInto(weir.JoinWindow(in.source(env, "a"), plain, weir.TumblingEventTimeWindows(time.Second), pairLine), t.TempDir())
		}, `JoinWindow: input "plain" carries no timestamps`, "add a WatermarkStrategy upstream"},
		"interval-bounds": {func(env *weir.Env) {
			sinkInto(weir.IntervalJoin(in.source(env, "a"), in.source(env, "b"), time.Second, 0, pairLine), t.TempDir())
		}, "lower bound 1s is above the upper bound 0s", "want lower ≤ upper"},
		"interval-fraction": {func(env *weir.Env) {
			sinkInto(weir.IntervalJoin(in.source(env, "a"), in.source(env, "b"), 0, 1500*time.Microsecond, pairLine), t.TempDir())
		}, "IntervalJoin upper bound 1.5ms", "use a whole number of milliseconds"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			env, _ := newEnv(testConfig(t, 1, "0"))
			c.build(env)
			err := env.Execute(context.Background(), "bad")
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.fix) {
				t.Fatalf("Execute = %v, want an error containing %q and the fix %q", err, c.want, c.fix)
			}
		})
	}
}
