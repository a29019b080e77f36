package inspect

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/jobs/windows"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/testutil"
)

// A checkpoint written by the heap backend with TTL states beside a plain
// one, event-time and processing-time timers: the TTL states are marked,
// the two timer sets counted apart, in the subtask and in the totals.
func TestInspectTTLAndEventTimers(t *testing.T) {
	s := openStorage(t)
	b := state.NewKeyedBackend(mustCodec[int64](t), keygroup.RangeFor(maxP, 1, 0), maxP)
	b.SetTTLClock(func() int64 { return 1_000 })
	ttl := state.WithTTL(state.TTLConfig{TTL: time.Hour})
	last, err := state.RegisterValue(b, "last", mustCodec[int64](t), ttl)
	if err != nil {
		t.Fatal(err)
	}
	buf, err := state.RegisterList(b, "buf", mustCodec[string](t), ttl)
	if err != nil {
		t.Fatal(err)
	}
	count, err := state.RegisterValue(b, "count", mustCodec[int64](t))
	if err != nil {
		t.Fatal(err)
	}
	for k := range int64(6) {
		b.SetCurrentKey(k, int(k))
		count.Update(k)
		if k < 4 {
			last.Update(k)
		}
		if k < 2 {
			buf.Add("x")
		}
		b.EventTimers().Register(100 + k) // 6 event-time timers
		if k == 0 {
			b.Timers().Register(5) // 1 processing-time timer
		}
	}
	h := writeKeyed(t, s, 2, "op.keyed", b)
	dir := commit(t, s, 2, checkpoint.Periodic, checkpoint.OperatorState{UID: "op", Parallelism: 1, MaxParallelism: maxP,
		Subtasks: []checkpoint.SubtaskStateEntry{{Subtask: 0, State: checkpoint.OperatorSubtaskState{UID: "op", Keyed: h}}}})
	r, err := Inspect(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	k := r.Operators[0].Subtasks[0].Keyed
	got := append([]KeyedState(nil), k.States...)
	for i := range got {
		got[i].Bytes = 0
	}
	want := []KeyedState{
		{Name: "buf", Kind: "list", TTL: true, Entries: 2, KeyGroups: 2},
		{Name: "count", Kind: "value", Entries: 6, KeyGroups: 6},
		{Name: "last", Kind: "value", TTL: true, Entries: 4, KeyGroups: 4},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("states:\n got %+v\nwant %+v", got, want)
	}
	if k.Timers != 1 || k.EventTimers != 6 || k.EventTimerBytes <= 0 || k.TimerBytes <= 0 {
		t.Errorf("timers %d (%d bytes), event timers %d (%d bytes); want 1 and 6", k.Timers, k.TimerBytes, k.EventTimers, k.EventTimerBytes)
	}
	if tot := r.Totals; tot.Timers != 1 || tot.EventTimers != 6 || len(tot.KeyedStates) != 3 || !tot.KeyedStates[0].TTL || tot.KeyedStates[1].TTL || !tot.KeyedStates[2].TTL {
		t.Errorf("totals: timers %d, event timers %d, keyed states %+v", tot.Timers, tot.EventTimers, tot.KeyedStates)
	}
}

// A real job's checkpoints: the built-in windows job (tumbling event-time
// windows), checkpointed every few milliseconds while it runs, on both
// backends. A checkpoint taken while windows were open holds the windows
// operator's event-time timers (one per open window and key) and no
// processing-time timer; the final one, after the end of input fired every
// window, holds none.
func TestInspectWindowsJob(t *testing.T) {
	for _, backend := range []string{"heap", "lsm"} {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			extra := map[string]string{config.CheckpointsNumRetained: "100"}
			if backend == "lsm" {
				extra[config.StateBackendType] = "lsm"
				extra[config.StateBackendIncremental] = "true"
				extra[config.StateBackendLSMDir] = t.TempDir()
			}
			env := weir.NewEnv(weir.WithConfig(testutil.FaultConfig(t, 2, filepath.Join(dir, "state"), "20ms", false, extra)))
			testutil.Observe(env, nil)
			testutil.KeepFinishedCheckpoints(env)
			o := windows.Options{Events: 1500, Keys: 5, Window: windows.Spec{Kind: "tumble", Size: 1000}, MaxDisorder: 100, OutOfOrderness: -1, Rate: 3000, Out: filepath.Join(dir, "out")}
			o.Defaults()
			windows.Build(env, o)
			if err := env.Execute(context.Background(), "windows"); err != nil {
				t.Fatal(err)
			}
			chks, err := filepath.Glob(filepath.Join(dir, "state", "windows", "chk-*"))
			if err != nil || len(chks) < 2 {
				t.Fatalf("checkpoints %v (%v), want at least 2", chks, err)
			}
			open, final := false, false
			for _, c := range chks {
				r, err := Inspect(context.Background(), c)
				if err != nil {
					t.Fatal(err)
				}
				var win *Operator
				for i := range r.Operators {
					if r.Operators[i].UID == "windows" {
						win = &r.Operators[i]
					}
				}
				if win == nil {
					t.Fatalf("%s: no windows operator in %+v", c, r.Operators)
				}
				var ev int64
				for _, s := range win.Subtasks {
					switch {
					case s.Keyed != nil:
						ev += s.Keyed.EventTimers
					case s.Incremental != nil:
						ev += s.Incremental.EventTimers
					}
				}
				if r.Totals.Timers != 0 || r.Totals.EventTimers != ev {
					t.Errorf("%s: %d processing-time timers, %d event-time timers in total, %d in the windows operator; want 0 and equal", c, r.Totals.Timers, r.Totals.EventTimers, ev)
				}
				// At most one open window per key per 1 s of event time
				// in flight: a handful.
				if ev > 2*o.Keys {
					t.Errorf("%s: %d event-time timers, want at most %d", c, ev, 2*o.Keys)
				}
				if r.Kind == "final" {
					final = true
					if ev != 0 {
						t.Errorf("final checkpoint %s: %d event-time timers, want none", c, ev)
					}
				} else if ev > 0 {
					open = true
				}
			}
			if !open || !final {
				t.Errorf("checkpoints %v: one with open windows %v, a final one %v; want both", chks, open, final)
			}
		})
	}
}
