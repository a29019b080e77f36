// Command cluster is a weir application that runs on a cluster: one
// binary that is the client, the JobManager and every TaskManager
// (application mode, docs/cluster.md). Its one job, keyedcount, counts
// generated clicks per page in keyed state and writes every updated count
// exactly once into part files.
//
//	go build -o keyedcount ./examples/cluster
//	./keyedcount run keyedcount --events 100000 --out /tmp/kc/out       # local
//	./keyedcount jobmanager --state-dir /tmp/kc/cluster &
//	./keyedcount taskmanager --slots 1 & ./keyedcount taskmanager --slots 1 &
//	./keyedcount run keyedcount --events 100000 --parallelism 2 \
//	    --out /tmp/kc/out --jobmanager 127.0.0.1:6123
//
// See README.md.
package main

import (
	"context"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/app"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/connectors/file"
)

// Click is one generated record: plain exported fields, so weir's codec
// can carry it between TaskManagers.
type Click struct {
	Seq  int64
	Page string
}

// Count is what the job emits after every click.
type Count struct {
	Page  string
	Count int64
}

// click is a pure function of its index: the source is replayable, and
// every process that builds the job generates the same clicks.
func click(i int64) Click {
	return Click{Seq: i, Page: "page-" + strconv.FormatInt(i*7919%pages, 10)}
}

const pages = 40

// line formats a Count as "page,count".
func line(c Count, dst []byte) []byte {
	dst = append(dst, c.Page...)
	dst = append(dst, ',')
	return strconv.AppendInt(dst, c.Count, 10)
}

// counter keeps one count per page in a ValueState.
type counter struct{ n weir.ValueState[int64] }

func (c *counter) Open(ctx context.Context, kc *weir.KeyedContext[string]) (err error) {
	c.n, err = weir.GetValueState[int64](kc, "count")
	return err
}

func (c *counter) ProcessElement(_ Click, kc *weir.KeyedContext[string], out *weir.Collector[Count]) error {
	n, _ := c.n.Value()
	n++
	c.n.Update(n)
	out.Collect(Count{Page: kc.CurrentKey(), Count: n})
	return nil
}

// options are keyedcount's flags.
type options struct {
	events      int64
	out         string
	parallelism int
}

// keyedCount is the job: flags in, graph out. Build reads only the flag
// values and the configuration, so every role builds the same graph.
func keyedCount() app.Job {
	return app.Job{
		Name:  "keyedcount",
		Short: "Count generated clicks per page, exactly once into files",
		Define: func(fs *pflag.FlagSet) app.Run {
			var o options
			fs.Int64Var(&o.events, "events", 100_000, "clicks to generate (0: unbounded)")
			fs.StringVar(&o.out, "out", "keyedcount-out", "folder for the committed part files (shared by every TaskManager)")
			fs.IntVarP(&o.parallelism, "parallelism", "p", 2, "subtasks per operator (parallelism.default)")
			app.MarkPath(fs, "out")
			app.MarkClientOnly(fs, "parallelism") // Configure folds it into the configuration
			return app.Run{
				Configure: func(_ context.Context, cfg *weir.Config) error {
					if o.events < 0 {
						return app.Usagef("--events must not be negative, got %d", o.events)
					}
					if o.parallelism < 1 {
						return app.Usagef("--parallelism must be at least 1, got %d", o.parallelism)
					}
					if err := cfg.Set(weir.ParallelismDefault, strconv.Itoa(o.parallelism)); err != nil {
						return err
					}
					if !cfg.IsSet(weir.CheckpointingInterval) {
						return cfg.Set(weir.CheckpointingInterval, "200 ms")
					}
					return nil
				},
				Build: func(env *weir.Env) error { return build(env, o) },
			}
		},
	}
}

func build(env *weir.Env, o options) error {
	clicks := weir.FromSource(env, datagen.New(click, datagen.WithCount(o.events))).Name("clicks").UID("clicks")
	byPage := weir.KeyBy(clicks, func(c Click) string { return c.Page })
	counts := weir.Process(byPage, func() weir.KeyedProcessFunction[string, Click, Count] { return &counter{} }).
		Name("count").UID("count")
	weir.SinkToTransactional(counts, file.ExactlyOnce(o.out, line)).Name("files").UID("files")
	return nil
}

func main() { app.Main(keyedCount()) }
