package weir_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// pausedSource emits "a", then after a pause "b" and "c", all of key 0.
type pausedSource struct{ step int }

func (s *pausedSource) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (s *pausedSource) Read(ctx context.Context, dst []string, _ int) ([]string, error) {
	s.step++
	switch s.step {
	case 1:
		return append(dst, "a"), nil
	case 2:
		time.Sleep(500 * time.Millisecond)
		return append(dst, "b", "c"), nil
	}
	return dst, io.EOF
}
func (s *pausedSource) SnapshotState(int64) error   { return nil }
func (s *pausedSource) Close(context.Context) error { return nil }

type ttlFn struct {
	ttl  time.Duration
	seen weir.ValueState[bool]
}

func (f *ttlFn) Open(_ context.Context, kc *weir.KeyedContext[int]) (err error) {
	var opts []weir.StateOption
	if f.ttl != 0 {
		opts = append(opts, weir.WithTTL(weir.StateTTL{TTL: f.ttl}))
	}
	f.seen, err = weir.GetValueState[bool](kc, "seen", opts...)
	return err
}

func (f *ttlFn) ProcessElement(v string, _ *weir.KeyedContext[int], out *weir.Collector[string]) error {
	_, ok := f.seen.Value()
	out.Collect(fmt.Sprintf("%s:%v", v, ok))
	f.seen.Update(true)
	return nil
}

// TestStateTTL: a value written before a pause longer than its time to
// live is gone after it, on both backends; without TTL it stays.
func TestStateTTL(t *testing.T) {
	for _, backend := range []string{"heap", "lsm"} {
		for _, ttl := range []time.Duration{0, 100 * time.Millisecond} {
			t.Run(fmt.Sprintf("%s/ttl=%v", backend, ttl), func(t *testing.T) {
				env, log := newEnv(testConfig(t, 1, "0", "state.backend.type", backend, "execution.buffer-timeout.interval", "0"))
				src := weir.FromSource(env, func() weir.Source[string] { return &pausedSource{} })
				keyed := weir.KeyBy(src, func(string) int { return 0 })
				out := sinkLines(t, weir.Process(keyed, func() weir.KeyedProcessFunction[int, string, string] { return &ttlFn{ttl: ttl} }).UID("ttl"))
				execute(t, env, log)
				want := []string{"a:false", "b:true", "c:true"}
				if ttl > 0 {
					want = []string{"a:false", "b:false", "c:true"}
				}
				got := committed(t, out)
				if strings.Join(got, " ") != strings.Join(want, " ") {
					t.Fatalf("got %v, want %v", got, want)
				}
			})
		}
	}
	t.Run("bad ttl", func(t *testing.T) {
		env, _ := newEnv(testConfig(t, 1, "0", "restart-strategy.type", "none"))
		src := weir.FromSource(env, func() weir.Source[string] { return &pausedSource{} })
		weir.SinkTo(weir.Process(weir.KeyBy(src, func(string) int { return 0 }), func() weir.KeyedProcessFunction[int, string, string] { return &ttlFn{ttl: -1} }),
			func() weir.Sink[string] { return &discardLines{} })
		err := env.Execute(context.Background(), "bad")
		if err == nil || !strings.Contains(err.Error(), `state "seen"`) || !strings.Contains(err.Error(), "positive") {
			t.Fatalf("Execute = %v, want an error naming the state and the bad TTL", err)
		}
	})
}
