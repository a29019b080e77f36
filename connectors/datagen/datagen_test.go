package datagen_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/internal/config"
)

// collect is an at-least-once sink gathering records for the test.
type collect struct {
	mu  *sync.Mutex
	out *[]int64
}

func (c collect) Open(context.Context, *weir.RuntimeContext) error { return nil }
func (c collect) Write(_ context.Context, b []int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	*c.out = append(*c.out, b...)
	return nil
}
func (c collect) Flush(context.Context) error { return nil }
func (c collect) Close(context.Context) error { return nil }

// Every index in [0, n) is emitted exactly once, whatever the ownership
// scheme and the parallelism.
func TestEveryIndexOnce(t *testing.T) {
	const n = 10_007
	owner := func(i int64, p int) int { return int((i % 13) * 7 % 13 % int64(p)) }
	for _, c := range []struct {
		name string
		opts []datagen.Option
	}{
		{"modulo", nil},
		{"owner", []datagen.Option{datagen.WithOwner(owner)}},
		{"owner-period", []datagen.Option{datagen.WithOwner(owner), datagen.WithOwnerPeriod(13)}},
	} {
		for p := 1; p <= 4; p++ {
			t.Run(fmt.Sprintf("%s/p%d", c.name, p), func(t *testing.T) {
				cfg := weir.NewConfig()
				for k, v := range map[string]string{config.ParallelismDefault: fmt.Sprint(p), config.CheckpointsDir: t.TempDir(), config.BatchSize: "64"} {
					if err := cfg.Set(k, v); err != nil {
						t.Fatal(err)
					}
				}
				env := weir.NewEnv(weir.WithConfig(cfg))
				var mu sync.Mutex
				var got []int64
				src := weir.FromSource(env, datagen.New(func(i int64) int64 { return i }, append([]datagen.Option{datagen.WithCount(n)}, c.opts...)...)).UID("src")
				weir.SinkTo(src, func() weir.Sink[int64] { return collect{&mu, &got} }).UID("sink")
				if err := env.Execute(context.Background(), "gen"); err != nil {
					t.Fatal(err)
				}
				slices.Sort(got)
				if len(got) != n {
					t.Fatalf("%d records, want %d", len(got), n)
				}
				for i, v := range got {
					if v != int64(i) {
						t.Fatalf("record %d is %d: an index is missing or repeated", i, v)
					}
				}
			})
		}
	}
}

// An Owner returning a subtask outside [0, parallelism) fails the job with
// a message naming the problem instead of losing records.
func TestOwnerOutOfRange(t *testing.T) {
	for _, opts := range [][]datagen.Option{
		{datagen.WithOwner(func(int64, int) int { return 5 })},
		{datagen.WithOwner(func(int64, int) int { return -1 }), datagen.WithOwnerPeriod(3)},
	} {
		cfg := weir.NewConfig()
		for k, v := range map[string]string{config.ParallelismDefault: "2", config.CheckpointsDir: t.TempDir()} {
			if err := cfg.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		env := weir.NewEnv(weir.WithConfig(cfg))
		var mu sync.Mutex
		var got []int64
		src := weir.FromSource(env, datagen.New(func(i int64) int64 { return i }, append([]datagen.Option{datagen.WithCount(100)}, opts...)...)).UID("src")
		weir.SinkTo(src, func() weir.Sink[int64] { return collect{&mu, &got} }).UID("sink")
		err := env.Execute(context.Background(), "gen")
		if err == nil || !strings.Contains(err.Error(), "the Owner function must return a subtask index") {
			t.Fatalf("Execute = %v", err)
		}
	}
}
