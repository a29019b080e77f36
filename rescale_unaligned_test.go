package weir_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
)

// TestUnalignedRescaleExchanges rescales a backpressured job in place
// from unaligned checkpoints, up and down, for each kind of exchange that
// can hold records in flight: rebalance, forward (a producer with two
// consumers is not chained into either), a union of two sources into a
// keyed operator, and broadcast. The sink is slow and the channels small,
// so the checkpoints the rescales redeploy from hold records in flight,
// which the restores redistribute. The committed output must be exactly a
// failure-free run's: every record once (twice where the job fans out).
func TestUnalignedRescaleExchanges(t *testing.T) {
	const n = 3_000
	type build func(env *weir.Env) (weir.Stream[string], []string)
	// slow holds the pipeline back at the sink: a few thousand records/s
	// per subtask.
	slow := func(s weir.Stream[string]) weir.Stream[string] {
		return weir.Map(s, func(v string) string { time.Sleep(150 * time.Microsecond); return v }).Name("slow").UID("slow")
	}
	gen := func(env *weir.Env, uid string, tag string) weir.Stream[string] {
		return weir.FromSource(env, datagen.New(func(i int64) string { return fmt.Sprint(tag, i) }, datagen.WithCount(n), datagen.WithRate(2_000))).UID(uid).Name(uid)
	}
	lines := func(tags ...string) []string {
		var out []string
		for _, tag := range tags {
			for i := range n {
				out = append(out, fmt.Sprint(tag, i))
			}
		}
		return out
	}
	cases := []struct {
		name  string
		build build
	}{
		{"rebalance", func(env *weir.Env) (weir.Stream[string], []string) {
			return slow(weir.Rebalance(gen(env, "src", "r"))), lines("r")
		}},
		{"forward", func(env *weir.Env) (weir.Stream[string], []string) {
			src := gen(env, "src", "f")
			a := weir.Map(src, func(v string) string { return "a" + v }).UID("a")
			b := weir.Map(src, func(v string) string { return "b" + v }).UID("b")
			return slow(weir.Union(a, b)), lines("af", "bf")
		}},
		{"union-keyed", func(env *weir.Env) (weir.Stream[string], []string) {
			u := weir.Union(gen(env, "src1", "x"), gen(env, "src2", "y"))
			keyed := weir.KeyBy(u, func(v string) string { return v })
			counted := weir.Process(keyed, func() weir.KeyedProcessFunction[string, string, string] { return &seenOnce{} }).UID("once")
			return slow(counted), lines("x", "y")
		}},
		{"broadcast", func(env *weir.Env) (weir.Stream[string], []string) {
			// Every subtask of the broadcast's consumer gets every
			// record; the keyed stage behind it passes each on once.
			b := weir.Broadcast(gen(env, "src", "b")).Stream().UID("everywhere")
			keyed := weir.KeyBy(b, func(v string) string { return v })
			return slow(weir.Process(keyed, func() weir.KeyedProcessFunction[string, string, string] { return &seenOnce{} }).UID("once")), lines("b")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env, log := newEnv(testConfig(t, 2, "30ms",
				config.CheckpointingUnaligned, "true", config.CheckpointingAlignedTimeout, "0",
				config.BatchSize, "16", config.NetworkCreditsPerChannel, "2"))
			s, want := c.build(env)
			out := sinkLines(t, s)
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			job, err := env.Start(ctx, "exchanges")
			if err != nil {
				t.Fatal(err)
			}
			st := hooks.Plan(env).Status
			for _, p := range []int{3, 1} {
				time.Sleep(400 * time.Millisecond)
				if _, err := rescaleRunning(ctx, job, weir.Rescale{Parallelism: p}); err != nil {
					t.Fatalf("rescale to %d: %v\nlog:\n%s", p, err, log)
				}
				for !runsAt(env, "slow", p) {
					if ctx.Err() != nil {
						t.Fatalf("not running at %d\nlog:\n%s", p, log)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			if err := job.Wait(); err != nil {
				t.Fatalf("job: %v\nlog:\n%s", err, log)
			}
			if st.RestoredChannelStateBytes.Load() == 0 {
				t.Errorf("no rescale restored records in flight: the slow sink should hold the pipeline back")
			}
			t.Logf("%d bytes of channel state replayed over both rescales", st.RestoredChannelStateBytes.Load())
			sameMultiset(t, want, committed(t, out))
		})
	}
}

// seenOnce passes each key's first record on and counts the others in
// keyed state: a record replayed twice into the same key would be
// dropped there, and one sent to a subtask that does not own its key
// fails the job.
type seenOnce struct {
	seen weir.ValueState[bool]
}

func (s *seenOnce) Open(ctx context.Context, kc *weir.KeyedContext[string]) error {
	var err error
	s.seen, err = weir.GetValueState[bool](kc, "seen")
	return err
}

func (s *seenOnce) ProcessElement(v string, kc *weir.KeyedContext[string], out *weir.Collector[string]) error {
	if ok, _ := s.seen.Value(); ok {
		return nil
	}
	s.seen.Update(true)
	out.Collect(v)
	return nil
}
