package weir_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/connectors/file"
)

// Click is a page view at event time TS (ms).
type Click struct {
	User string
	TS   int64
}

type clickCount struct{}

func (clickCount) CreateAccumulator() int64   { return 0 }
func (clickCount) Add(_ Click, n int64) int64 { return n + 1 }
func (clickCount) Result(n int64) int64       { return n }
func (clickCount) Merge(a, b int64) int64     { return a + b }

// perUser formats a window's count with its user and start.
type perUser struct{}

func (perUser) Process(user string, wc *weir.WindowContext, counts []int64, out *weir.Collector[string]) error {
	out.Collect(fmt.Sprintf("%s [%d,%d) %d clicks", user, wc.Window().Start, wc.Window().End, counts[0]))
	return nil
}

// Clicks per user per second of event time: timestamps and watermarks
// from the source (at most 100 ms out of order), tumbling one-second
// windows, a count per window written exactly once.
func ExampleWindow() {
	dir, err := os.MkdirTemp("", "weir-window-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "out")

	env := weir.NewEnv(weir.WithParallelism(2), weir.WithCheckpointDir(filepath.Join(dir, "checkpoints")))
	// Click i by user i%2 at 250 ms steps, every third one 100 ms late.
	gen := func(i int64) Click { return Click{User: fmt.Sprintf("user-%d", i%2), TS: i*250 - (i%3)*100} }
	strategy := weir.ForBoundedOutOfOrderness[Click](100 * time.Millisecond).
		WithTimestampAssigner(func(c Click, _ int64) int64 { return c.TS })
	clicks := weir.FromSourceWithWatermarks(env, datagen.New(gen, datagen.WithCount(16)), strategy).UID("clicks")
	perSecond := weir.Window(weir.KeyBy(clicks, func(c Click) string { return c.User }), weir.TumblingEventTimeWindows(time.Second))
	counts := weir.AggregateProcessWindow(perSecond, weir.AggregateFunction[Click, int64, int64](clickCount{}),
		func() weir.ProcessWindowFunction[string, int64, string] { return perUser{} }).UID("counts")
	weir.SinkToTransactional(counts, file.ExactlyOnce(out, appendLine)).UID("out")

	if err := env.Execute(context.Background(), "clicks"); err != nil {
		panic(err)
	}
	lines, err := file.ReadCommitted(out)
	if err != nil {
		panic(err)
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// user-0 [0,1000) 3 clicks
	// user-0 [1000,2000) 2 clicks
	// user-0 [2000,3000) 1 clicks
	// user-0 [3000,4000) 2 clicks
	// user-1 [0,1000) 2 clicks
	// user-1 [1000,2000) 2 clicks
	// user-1 [2000,3000) 2 clicks
	// user-1 [3000,4000) 2 clicks
}
