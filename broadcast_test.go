package weir_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/testutil"
)

// The broadcast tests' job: rule updates u = 0, 1, … (one producer) are
// broadcast; transactions i are keyed by account i % bcAccounts. Its
// output does not depend on how the two inputs interleave, so it can be
// compared exactly with a model:
//
//   - every subtask applies update u to the broadcast state "rules" (Put,
//     Remove or Clear of the current rules) and "history" (every update by
//     version), and prints "b u <current rules>": p identical lines per
//     update show that every subtask holds the same state after it;
//   - transaction i is evaluated against the rules as of version
//     bcNeed(i): one that arrives before its subtask applied that version
//     waits in the keyed list state "pending", and the update that brings
//     the version releases it through ApplyToKeyedState; it prints
//     "tx i account n matches" with n the account's count (keyed state).

const bcAccounts = 17

// bcUpdate is a rule update: Put rule ID (Op 'p'), Remove it ('r') or
// Clear every rule ('c').
type bcUpdate struct {
	Ver int64
	Op  byte
	ID  int64
	Mod int64
}

func bcUpdateOf(u int64) bcUpdate {
	switch {
	case u%13 == 12:
		return bcUpdate{Ver: u, Op: 'c'}
	case u%7 == 3:
		return bcUpdate{Ver: u, Op: 'r', ID: u % 5}
	}
	return bcUpdate{Ver: u, Op: 'p', ID: u % 5, Mod: 2 + u%11}
}

// apply is the update's effect on a map of current rules (rule ID to
// modulus).
func (up bcUpdate) apply(put func(id, mod int64), remove func(id int64), clear func()) {
	switch up.Op {
	case 'p':
		put(up.ID, up.Mod)
	case 'r':
		remove(up.ID)
	case 'c':
		clear()
	}
}

// bcNeed is the rule version transaction i is evaluated at: the versions
// spread over the transactions, so most wait for a while.
func bcNeed(i, n, r int64) int64 { return i * r / n }

func bcRulesLine(u int64, rules map[int64]int64) string {
	ids := slices.Sorted(maps.Keys(rules))
	parts := make([]string, len(ids))
	for k, id := range ids {
		parts[k] = fmt.Sprintf("%d:%d", id, rules[id])
	}
	return fmt.Sprintf("b %d [%s]", u, strings.Join(parts, " "))
}

// bcMatches lists the rules (as of the history up to version need) whose
// modulus divides i.
func bcMatches(i, need int64, history func(v int64) (bcUpdate, bool)) string {
	rules := map[int64]int64{}
	for v := int64(0); v <= need; v++ {
		up, ok := history(v)
		if !ok {
			panic(fmt.Sprintf("version %d missing from the history", v))
		}
		up.apply(func(id, mod int64) { rules[id] = mod }, func(id int64) { delete(rules, id) }, func() { clear(rules) })
	}
	var m []string
	for _, id := range slices.Sorted(maps.Keys(rules)) {
		if i%rules[id] == 0 {
			m = append(m, fmt.Sprint(id))
		}
	}
	return strings.Join(m, ",")
}

// bcModel is the job's output at parallelism p per update u (pOf(u)).
func bcModel(n, r int64, pOf func(u int64) int) []string {
	var out []string
	rules := map[int64]int64{}
	for u := range r {
		bcUpdateOf(u).apply(func(id, mod int64) { rules[id] = mod }, func(id int64) { delete(rules, id) }, func() { clear(rules) })
		for range pOf(u) {
			out = append(out, bcRulesLine(u, rules))
		}
	}
	counts := map[int64]int64{}
	for i := range n {
		counts[i%bcAccounts]++
		out = append(out, fmt.Sprintf("tx %d %d %d %s", i, i%bcAccounts, counts[i%bcAccounts], bcMatches(i, bcNeed(i, n, r), func(v int64) (bcUpdate, bool) { return bcUpdateOf(v), true })))
	}
	return out
}

var (
	bcRules   = weir.BroadcastStateOf[int64, int64]("rules")
	bcHistory = weir.BroadcastStateOf[int64, bcUpdate]("history")
)

type bcFn struct {
	n, r    int64
	rules   *weir.BroadcastState[int64, int64]
	history *weir.BroadcastState[int64, bcUpdate]
	pending weir.ListState[int64]
	count   weir.ValueState[int64]
	// applied is the newest version in the history (-1: none).
	applied int64
	// slow, when set, makes each transaction take that long, so that
	// records wait in the operator's input channels at a barrier.
	slow time.Duration
}

func (f *bcFn) Open(_ context.Context, kc *weir.KeyedContext[int64]) (err error) {
	if f.rules, err = weir.GetBroadcastState(kc, bcRules); err != nil {
		return err
	}
	if f.history, err = weir.GetBroadcastState(kc, bcHistory); err != nil {
		return err
	}
	if f.pending, err = weir.GetListState[int64](kc, "pending"); err != nil {
		return err
	}
	f.count, err = weir.GetValueState[int64](kc, "count")
	f.applied = int64(f.history.Len()) - 1
	return err
}

func (f *bcFn) ProcessElement(i int64, kc *weir.KeyedContext[int64], out *weir.Collector[string]) error {
	if f.slow > 0 {
		time.Sleep(f.slow)
	}
	if bcNeed(i, f.n, f.r) > f.applied || len(f.pending.Get()) > 0 {
		f.pending.Add(i)
		return nil
	}
	f.evaluate(i, kc.CurrentKey(), out)
	return nil
}

func (f *bcFn) evaluate(i, account int64, out *weir.Collector[string]) {
	c, _ := f.count.Value()
	c++
	f.count.Update(c)
	out.Collect(fmt.Sprintf("tx %d %d %d %s", i, account, c, bcMatches(i, bcNeed(i, f.n, f.r), f.history.Get)))
}

func (f *bcFn) ProcessBroadcastElement(u int64, bc *weir.KeyedBroadcastContext[int64], out *weir.Collector[string]) error {
	up := bcUpdateOf(u)
	up.apply(f.rules.Put, f.rules.Remove, f.rules.Clear)
	f.history.Put(u, up)
	f.applied = u
	current := map[int64]int64{}
	for id, mod := range f.rules.All() {
		current[id] = mod
	}
	out.Collect(bcRulesLine(u, current))
	// Release the waiting transactions this version covers, in order.
	return bc.ApplyToKeyedState("pending", func(account int64) error {
		waiting := f.pending.Get()
		k := 0
		for k < len(waiting) && bcNeed(waiting[k], f.n, f.r) <= u {
			f.evaluate(waiting[k], account, out)
			k++
		}
		if k == len(waiting) {
			f.pending.Clear()
		} else if k > 0 {
			f.pending.Update(slices.Clone(waiting[k:]))
		}
		return nil
	})
}

// buildBroadcastJob adds the job to env: n transactions and r updates from
// the given sources at parallelism 1, the broadcast operator at the
// default parallelism; it returns the output stream.
func buildBroadcastJob(env *weir.Env, n, r int64, txs, updates func() weir.Source[int64], slow time.Duration) weir.Stream[string] {
	tx := weir.FromSource(env, txs).UID("txs").Parallelism(1)
	up := weir.FromSource(env, updates).UID("updates").Parallelism(1)
	keyed := weir.KeyBy(tx, func(i int64) int64 { return i % bcAccounts })
	return weir.KeyedBroadcastProcess(keyed, weir.Broadcast(up, bcRules, bcHistory), func() weir.KeyedBroadcastProcessFunction[int64, int64, int64, string] {
		return &bcFn{n: n, r: r, applied: -1, slow: slow}
	}).UID("rules")
}

func paced(n int64, rate float64) func() weir.Source[int64] {
	return datagen.New(func(i int64) int64 { return i }, datagen.WithCount(n), datagen.WithRate(rate))
}

// TestBroadcastStateExactUnderFailures: the job under injected failures
// at every point, aligned, unaligned and WEAKLY_CONSISTENT, at
// parallelism 1 and 3: the
// committed output equals the model's exactly, so every subtask printed
// the same broadcast state after each update, once.
func TestBroadcastStateExactUnderFailures(t *testing.T) {
	const n, r = 6_000, 60
	for _, c := range []struct {
		mode     string
		p        int
		failures int
	}{{"aligned", 1, 0}, {"aligned", 3, 0}, {"aligned", 3, 3}, {"unaligned", 3, 3}, {"unaligned-2tm", 3, 3}, {"alternating", 3, 3}, {"weak", 3, 3}} {
		t.Run(fmt.Sprintf("%s/p%d/failures%d", c.mode, c.p, c.failures), func(t *testing.T) {
			extra := map[string]string{}
			switch c.mode {
			case "unaligned":
				extra[config.CheckpointingUnaligned] = "true"
			case "unaligned-2tm":
				// Barriers and records between TaskManagers cross
				// loopback TCP: in band there too.
				extra[config.CheckpointingUnaligned] = "true"
				extra[config.LocalTaskManagers] = "2"
			case "alternating":
				// Aligned first, unaligned after 1 ms of alignment.
				extra[config.CheckpointingUnaligned] = "true"
				extra[config.CheckpointingAlignedTimeout] = "1ms"
			case "weak":
				// Each task snapshots and restarts alone: every subtask
				// stores its own copy of the broadcast state.
				extra[config.CheckpointingMode] = config.ModeWeak
			}
			env := weir.NewEnv(weir.WithConfig(testutil.FaultConfig(t, c.p, t.TempDir(), "10ms", false, extra)))
			var plan *faults.Plan
			if c.failures > 0 {
				plan = &faults.Plan{Failures: c.failures, Seed: int64(c.p) + 11, Span: n, Points: faults.AllPoints(), OnePerAttempt: true}
			}
			log, inj := testutil.Observe(env, plan)
			var slow time.Duration
			if strings.HasPrefix(c.mode, "unaligned") || c.mode == "alternating" {
				// Backpressure: broadcast records wait in the
				// operator's channels when an unaligned barrier
				// would overtake them.
				slow = 100 * time.Microsecond
			}
			dir := sinkLines(t, buildBroadcastJob(env, n, r, paced(n, 30_000), paced(r, 300), slow))
			execute(t, env, log)
			if inj != nil && inj.Fired() != c.failures {
				t.Errorf("%d of %d failures fired", inj.Fired(), c.failures)
			}
			sameMultiset(t, bcModel(n, r, func(int64) int { return c.p }), committed(t, dir))
			st := hooks.Plan(env).Status
			if wk := &st.Weak; wk.Lost.Load() != 0 || wk.Duplicated.Load() != 0 {
				t.Fatalf("weak mode lost %d and duplicated %d records: its logs are large enough for none", wk.Lost.Load(), wk.Duplicated.Load())
			}
			t.Logf("%d checkpoints, %d restarts, %d task restarts", st.CompletedCheckpoints.Load(), st.Restarts.Load(), st.Weak.TaskRestarts.Load())
		})
	}
}

// TestBroadcastStateUnalignedFallsBackPerEdge: in an unaligned job the
// broadcast operator's task aligns (its checkpoints hold no channel
// state), while the task behind it, a slow map, still records what its
// unaligned barriers overtook. (The exact output of an unaligned run
// under failures is TestBroadcastStateExactUnderFailures's.)
func TestBroadcastStateUnalignedFallsBackPerEdge(t *testing.T) {
	const n, r = 1_000_000, 50
	stateDir := t.TempDir()
	cfg := testutil.FaultConfig(t, 2, stateDir, "5ms", false, map[string]string{config.CheckpointingUnaligned: "true", config.BatchSize: "8", config.CheckpointsNumRetained: "100"})
	env := weir.NewEnv(weir.WithConfig(cfg))
	log, _ := testutil.Observe(env, nil)
	out := buildBroadcastJob(env, n, r, paced(n, 20_000), paced(r, 50), 0)
	slow := weir.Map(weir.Rebalance(out), func(s string) string {
		time.Sleep(50 * time.Microsecond)
		return s
	}).UID("slow")
	weir.SinkTo(slow, func() weir.Sink[string] { return collectSink{&syncLines{}} }).UID("collect")
	cancelAfterCheckpoints(t, env, log, 8)

	chks, _ := filepath.Glob(filepath.Join(stateDir, "test", "chk-*"))
	if len(chks) == 0 {
		t.Fatalf("no checkpoints under %s", stateDir)
	}
	var slowChannels int
	for _, chk := range chks {
		md, _, err := storage.ReadMetadata(t.Context(), chk)
		if err != nil {
			continue // retention removed it meanwhile
		}
		for _, op := range md.Operators {
			for _, s := range op.Subtasks {
				if s.State.Channels == nil || len(s.State.Channels.Channels) == 0 {
					continue
				}
				if op.UID == "rules" {
					t.Fatalf("%s holds channel state of the broadcast operator's subtask %d", chk, s.Subtask)
				}
				slowChannels++
			}
		}
	}
	if slowChannels == 0 {
		t.Fatalf("no checkpoint of %d holds channel state of another task: the job took no unaligned checkpoint, and the test shows nothing", len(chks))
	}
	t.Logf("%d checkpoints; %d subtask states of other tasks hold channel state", len(chks), slowChannels)
}

// broadcastStateBytes sums the bytes of the broadcast state elements over
// every subtask of operator uid in the checkpoint at path, and counts the
// subtasks that stored any.
func broadcastStateBytes(t *testing.T, path, uid string) (bytes, holders int) {
	t.Helper()
	md, _, err := storage.ReadMetadata(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	op := md.Operator(uid)
	if op == nil {
		t.Fatalf("%s: no operator %q", path, uid)
	}
	for _, s := range op.Subtasks {
		held := false
		for name, elems := range s.State.Operator {
			if !strings.HasPrefix(name, runtime.BroadcastStatePrefix) {
				continue
			}
			for _, e := range elems {
				bytes += len(e)
				held = true
			}
		}
		if held {
			holders++
		}
	}
	return bytes, holders
}

// TestBroadcastStateStoredOnce: a savepoint holds the broadcast state once,
// whatever the parallelism: its size at parallelism 1 and 4 is the same,
// and one subtask holds it.
func TestBroadcastStateStoredOnce(t *testing.T) {
	const n, r = 1_000, 50
	sizes := map[int]int{}
	for _, p := range []int{1, 4} {
		env, log := newEnv(testConfig(t, p, "0"))
		var seen syncLines
		out := buildBroadcastJob(env, n, r, func() weir.Source[int64] { return &evolveSource{limit: n, pause: true} }, func() weir.Source[int64] { return &evolveSource{limit: r, pause: true} }, 0)
		weir.SinkTo(out, func() weir.Sink[string] { return collectSink{&seen} }).UID("collect")
		job, err := env.Start(t.Context(), "test")
		if err != nil {
			t.Fatal(err)
		}
		// Every update reached every subtask, and every transaction was
		// evaluated: the state is the same at both parallelisms.
		want := int(n) + int(r)*p
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
			seen.mu.Lock()
			got := len(seen.lines)
			seen.mu.Unlock()
			if got == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("p=%d: %d of %d lines\nlog:\n%s", p, got, want, log)
			}
		}
		sp, err := testutil.StopJob(t.Context(), job, t.TempDir())
		if err != nil {
			t.Fatalf("stop: %v\nlog:\n%s", err, log)
		}
		_ = job.Wait()
		size, holders := broadcastStateBytes(t, sp, "rules")
		if holders != 1 {
			t.Errorf("p=%d: %d subtasks stored broadcast state, want 1", p, holders)
		}
		sizes[p] = size
	}
	if sizes[1] == 0 || sizes[1] != sizes[4] {
		t.Fatalf("broadcast state bytes by parallelism: %v, want the same non-zero size", sizes)
	}
	t.Logf("broadcast state: %d bytes at parallelism 1 and 4", sizes[1])
}

// TestBroadcastStateRescale stops the job with a savepoint at parallelism
// 2 halfway and restores it at 3 and at 1: every transaction is output
// once with the right rules and count, each update once per subtask of
// the run that processed it.
func TestBroadcastStateRescale(t *testing.T) {
	const n, r = 3_000, 40
	const n1, r1 = 1_300, 17 // the first run's part
	for _, to := range []int{3, 1} {
		t.Run(fmt.Sprintf("2->%d", to), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			cfg := testConfig(t, 2, "0")
			env1, log1 := newEnv(cfg)
			sinkInto(buildBroadcastJob(env1, n, r, func() weir.Source[int64] { return &evolveSource{limit: n1, pause: true} }, func() weir.Source[int64] { return &evolveSource{limit: r1, pause: true} }, 0), dir)
			job, err := env1.Start(t.Context(), "test")
			if err != nil {
				t.Fatal(err)
			}
			st := hooks.Plan(env1).Status
			// Both sources emitted their part (they pause at their limit)
			// once the job ran a while; the stop's final checkpoint covers
			// what the operator processed.
			for st.SourceRecords.Load() < n1+r1 {
				time.Sleep(time.Millisecond)
			}
			sp, err := testutil.StopJob(t.Context(), job, t.TempDir())
			if err != nil {
				t.Fatalf("stop: %v\nlog:\n%s", err, log1)
			}
			_ = job.Wait()
			if err := cfg.Set(config.ParallelismDefault, fmt.Sprint(to)); err != nil {
				t.Fatal(err)
			}
			env2, log2 := newEnvFrom(cfg, sp)
			sinkInto(buildBroadcastJob(env2, n, r, func() weir.Source[int64] { return &evolveSource{limit: n} }, func() weir.Source[int64] { return &evolveSource{limit: r} }, 0), dir)
			execute(t, env2, log2)
			sameMultiset(t, bcModel(n, r, func(u int64) int {
				if u < r1 {
					return 2
				}
				return to
			}), committed(t, dir))
		})
	}
}

// applyFn counts per key and, on a broadcast record, resets every key
// whose count is at least the record (ApplyToKeyedState), printing
// each reset.
type applyFn struct {
	count   weir.ValueState[int64]
	counted *atomic.Int64
}

func (f *applyFn) Open(_ context.Context, kc *weir.KeyedContext[string]) (err error) {
	f.count, err = weir.GetValueState[int64](kc, "count")
	return err
}

func (f *applyFn) ProcessElement(v string, kc *weir.KeyedContext[string], out *weir.Collector[string]) error {
	c, _ := f.count.Value()
	f.count.Update(c + 1)
	f.counted.Add(1)
	return nil
}

func (f *applyFn) ProcessBroadcastElement(limit int64, bc *weir.KeyedBroadcastContext[string], out *weir.Collector[string]) error {
	return bc.ApplyToKeyedState("count", func(key string) error {
		if c, _ := f.count.Value(); c >= limit {
			out.Collect(fmt.Sprintf("reset %s at %d", key, c))
			f.count.Clear()
		}
		return nil
	})
}

// TestBroadcastApplyToKeyedState: a broadcast record reaches the state of
// every key on every subtask, and may change or clear it; keys without
// the state are not visited.
func TestBroadcastApplyToKeyedState(t *testing.T) {
	env, log := newEnv(testConfig(t, 3, "0"))
	words := []string{"a", "b", "b", "c", "c", "c", "d", "d", "d", "d"}
	var counted atomic.Int64
	src := weir.Map(weir.FromSource(env, func() weir.Source[int64] { return &evolveSource{limit: int64(len(words))} }).Parallelism(1),
		func(i int64) string { return words[i] })
	// The limit comes once every word was counted.
	limits := weir.FromSource(env, func() weir.Source[int64] {
		return &gatedSource{items: []int64{3}, open: func() bool { return counted.Load() == int64(len(words)) }}
	}).Parallelism(1)
	var out syncLines
	res := weir.KeyedBroadcastProcess(weir.KeyBy(src, func(w string) string { return w }), weir.Broadcast(limits), func() weir.KeyedBroadcastProcessFunction[string, string, int64, string] {
		return &applyFn{counted: &counted}
	})
	weir.SinkTo(res, func() weir.Sink[string] { return collectSink{&out} })
	execute(t, env, log)
	sameMultiset(t, []string{"reset c at 3", "reset d at 4"}, out.lines)
}

// gatedSource emits items once open returns true, then ends.
type gatedSource struct {
	items []int64
	open  func() bool
}

func (s *gatedSource) Open(context.Context, *weir.RuntimeContext) error { return nil }

func (s *gatedSource) Read(_ context.Context, dst []int64, _ int) ([]int64, error) {
	if !s.open() {
		time.Sleep(time.Millisecond)
		return dst, nil
	}
	return append(dst, s.items...), io.EOF
}

func (s *gatedSource) SnapshotState(int64) error   { return nil }
func (s *gatedSource) Close(context.Context) error { return nil }

// TestBroadcastStateReadOnlyOnTheKeyedSide: a change of broadcast state
// while processing the keyed input fails the job at once, naming the
// state, without restarts.
func TestBroadcastStateReadOnlyOnTheKeyedSide(t *testing.T) {
	env, log := newEnv(testConfig(t, 2, "0"))
	src := weir.FromSource(env, paced(10, 0)).Parallelism(1)
	up := weir.FromSource(env, paced(1, 0)).Parallelism(1)
	res := weir.KeyedBroadcastProcess(weir.KeyBy(src, func(i int64) int64 { return i }), weir.Broadcast(up, bcRules), func() weir.KeyedBroadcastProcessFunction[int64, int64, int64, string] {
		return &writesOnKeyedSide{}
	})
	weir.SinkTo(res, func() weir.Sink[string] { return collectSink{&syncLines{}} })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err := env.Execute(ctx, "test")
	if err == nil || !strings.Contains(err.Error(), `broadcast state "rules": Put outside ProcessBroadcastElement`) {
		t.Fatalf("Execute: %v, want the refused Put\nlog:\n%s", err, log)
	}
	if n := hooks.Plan(env).Status.Restarts.Load(); n != 0 {
		t.Errorf("%d restarts, want none: the error is the program's", n)
	}
}

type writesOnKeyedSide struct {
	rules *weir.BroadcastState[int64, int64]
}

func (f *writesOnKeyedSide) Open(_ context.Context, kc *weir.KeyedContext[int64]) (err error) {
	f.rules, err = weir.GetBroadcastState(kc, bcRules)
	return err
}

func (f *writesOnKeyedSide) ProcessElement(i int64, _ *weir.KeyedContext[int64], _ *weir.Collector[string]) error {
	f.rules.Put(i, i)
	return nil
}

func (f *writesOnKeyedSide) ProcessBroadcastElement(int64, *weir.KeyedBroadcastContext[int64], *weir.Collector[string]) error {
	return nil
}

// thresholdFn tags each record with the broadcast thresholds it reaches.
type thresholdFn struct {
	th      *weir.BroadcastState[string, int64]
	applied *atomic.Int64
}

var bcThresholds = weir.BroadcastStateOf[string, int64]("thresholds")

func (f *thresholdFn) Open(_ context.Context, rc *weir.RuntimeContext) (err error) {
	f.th, err = weir.GetBroadcastState(rc, bcThresholds)
	return err
}

func (f *thresholdFn) ProcessElement(v int64, _ *weir.BroadcastContext, out *weir.Collector[string]) error {
	var names []string
	for name, at := range f.th.All() {
		if v >= at {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	out.Collect(fmt.Sprintf("%d %v", v, names))
	return nil
}

func (f *thresholdFn) ProcessBroadcastElement(u int64, _ *weir.BroadcastContext, _ *weir.Collector[string]) error {
	switch u {
	case 0, 1, 2:
		f.th.Put(fmt.Sprint("t", u), 10*(u+1))
	case 3:
		f.th.Remove("t0")
	}
	f.applied.Add(1)
	return nil
}

// TestBroadcastProcessNonKeyed: the non-keyed form at parallelism 2:
// records spread over both subtasks read the thresholds every subtask
// holds once the broadcast records (put, put, put, remove) reached both.
func TestBroadcastProcessNonKeyed(t *testing.T) {
	const p = 2
	env, log := newEnv(testConfig(t, p, "5ms"))
	var applied atomic.Int64
	// The records come once every subtask applied the four updates.
	values := weir.FromSource(env, func() weir.Source[int64] {
		return &gatedSource{items: []int64{5, 15, 25, 35}, open: func() bool { return applied.Load() == 4*p }}
	}).Parallelism(1)
	updates := weir.FromSource(env, func() weir.Source[int64] { return &evolveSource{limit: 4} }).Parallelism(1)
	var out syncLines
	res := weir.BroadcastProcess(values, weir.Broadcast(updates, bcThresholds), func() weir.BroadcastProcessFunction[int64, int64, string] {
		return &thresholdFn{applied: &applied}
	})
	weir.SinkTo(res, func() weir.Sink[string] { return collectSink{&out} })
	execute(t, env, log)
	sameMultiset(t, []string{"5 []", "15 []", "25 [t1]", "35 [t1 t2]"}, out.lines)
}

// TestBroadcastStateRestoreChecks restores the broadcast golden savepoint
// into programs that changed its broadcast state: other types fail before
// anything runs, naming the state; a state Broadcast no longer declares
// fails at once without restarts, or is dropped with
// --allow-non-restored-state.
func TestBroadcastStateRestoreChecks(t *testing.T) {
	sp := filepath.Join(t.TempDir(), "savepoint")
	copyTree(t, filepath.Join("testdata", "golden", "broadcast-heap-savepoint-v3", "savepoint"), sp)
	sp = mustAbs(t, filepath.Join(sp, "chk-1"))
	run := func(t *testing.T, decls []weir.BroadcastStateDecl, opts ...weir.Option) (*weir.Env, error) {
		cfg := testConfig(t, 2, "0")
		log := &syncBuffer{}
		env := weir.NewEnv(append([]weir.Option{weir.WithConfig(cfg), weir.WithRestoreFrom(sp), weir.WithLogger(slog.New(slog.NewTextHandler(log, nil)))}, opts...)...)
		src := weir.FromSource(env, func() weir.Source[int64] { return &evolveSource{limit: goldenPhase1 + 10} }).UID("numbers").Parallelism(1)
		updates := weir.FromSource(env, func() weir.Source[int64] { return &evolveSource{limit: goldenRules} }).UID("updates").Parallelism(1)
		res := weir.KeyedBroadcastProcess(weir.KeyBy(src, func(v int64) int64 { return v % goldenKeys }), weir.Broadcast(updates, decls...),
			func() weir.KeyedBroadcastProcessFunction[int64, int64, int64, string] { return &countOnly{} }).UID("broadcast")
		weir.SinkTo(res, func() weir.Sink[string] { return collectSink{&syncLines{}} }).UID("collect")
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		err := env.Execute(ctx, "test")
		t.Logf("%v", err)
		return env, err
	}
	t.Run("other types", func(t *testing.T) {
		_, err := run(t, []weir.BroadcastStateDecl{weir.BroadcastStateOf[int64, string]("rules")})
		if err == nil || !strings.Contains(err.Error(), `"broadcast/rules"`) {
			t.Fatalf("Execute: %v, want the incompatible broadcast state named", err)
		}
	})
	t.Run("undeclared", func(t *testing.T) {
		env, err := run(t, nil)
		if err == nil || !strings.Contains(err.Error(), `broadcast state ["rules"]`) || !strings.Contains(err.Error(), "no longer declares") {
			t.Fatalf("Execute: %v, want the undeclared broadcast state named", err)
		}
		if n := hooks.Plan(env).Status.Restarts.Load(); n != 0 {
			t.Errorf("%d restarts, want none", n)
		}
	})
	t.Run("undeclared, allowed", func(t *testing.T) {
		if _, err := run(t, nil, weir.WithAllowNonRestoredState()); err != nil {
			t.Fatalf("Execute: %v", err)
		}
	})
}

// countOnly keeps a count per key, as the broadcast golden's function,
// and reads no broadcast state.
type countOnly struct{ count weir.ValueState[int64] }

func (f *countOnly) Open(_ context.Context, kc *weir.KeyedContext[int64]) (err error) {
	f.count, err = weir.GetValueState[int64](kc, "count")
	return err
}

func (f *countOnly) ProcessElement(int64, *weir.KeyedContext[int64], *weir.Collector[string]) error {
	c, _ := f.count.Value()
	f.count.Update(c + 1)
	return nil
}

func (f *countOnly) ProcessBroadcastElement(int64, *weir.KeyedBroadcastContext[int64], *weir.Collector[string]) error {
	return nil
}
