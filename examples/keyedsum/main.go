// Command keyedsum is the complete example of docs/api.md: generated
// payments keyed by user, a running total per user kept in keyed state, and
// every update written exactly once into part files.
//
//	go run ./examples/keyedsum --events 100000 --dir /tmp/keyedsum
//
// Stop it (Ctrl-C) and start the same command again: it resumes from its
// newest checkpoint in <dir>/checkpoints, and the committed lines in
// <dir>/out are those of a run without the interruption.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/connectors/file"
)

// Payment is one generated record. State and transaction handles are
// serialized by weir's codec: exported fields of plain types are enough.
type Payment struct {
	Seq    int64
	User   string
	Amount int64
}

// Total is what the job emits after every payment.
type Total struct {
	User  string
	Count int64
	Sum   int64
}

// line formats a Total as one output line; the file sink calls it per record
// with a reused buffer.
func line(t Total, dst []byte) []byte {
	dst = append(dst, t.User...)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, t.Count, 10)
	dst = append(dst, ',')
	return strconv.AppendInt(dst, t.Sum, 10)
}

// payment is a pure function of its index, which makes the datagen source
// replayable: after a restore it regenerates exactly the records after the
// checkpoint.
func payment(i int64) Payment {
	return Payment{Seq: i, User: "user-" + strconv.FormatInt(i%50, 10), Amount: i%100 + 1}
}

// runningTotal keeps one Total per user in a ValueState.
type runningTotal struct {
	total weir.ValueState[Total]
}

// Open registers the state. It runs once per subtask and attempt, after the
// state was restored, so the handle sees the restored values. The function
// registers no timers, so it has no OnTimer (weir.TimerFunction).
func (r *runningTotal) Open(_ context.Context, kc *weir.KeyedContext[string]) (err error) {
	r.total, err = weir.GetValueState[Total](kc, "total")
	return err
}

// ProcessElement runs with the payment's user as the current key.
func (r *runningTotal) ProcessElement(p Payment, kc *weir.KeyedContext[string], out *weir.Collector[Total]) error {
	t, _ := r.total.Value() // zero Total for a new user
	t.User = kc.CurrentKey()
	t.Count++
	t.Sum += p.Amount
	r.total.Update(t) // a fresh value: Total holds no pointers, so nothing is shared with the snapshot
	out.Collect(t)
	return nil
}

func main() {
	events := flag.Int64("events", 100_000, "payments to generate (0: unbounded)")
	dir := flag.String("dir", "keyedsum-data", "folder for checkpoints and output")
	parallelism := flag.Int("parallelism", 2, "subtasks per operator")
	flag.Parse()
	if err := run(*events, *dir, *parallelism); err != nil {
		fmt.Fprintln(os.Stderr, "keyedsum:", err)
		os.Exit(1)
	}
}

func run(events int64, dir string, parallelism int) error {
	out := filepath.Join(dir, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}

	env := weir.NewEnv(
		weir.WithCheckpointInterval(200*time.Millisecond),
		weir.WithCheckpointDir(filepath.Join(dir, "checkpoints")),
		weir.WithParallelism(parallelism),
	)

	payments := weir.FromSource(env, datagen.New(payment, datagen.WithCount(events))).
		Name("payments").UID("payments")
	byUser := weir.KeyBy(payments, func(p Payment) string { return p.User })
	totals := weir.Process(byUser, func() weir.KeyedProcessFunction[string, Payment, Total] {
		return &runningTotal{}
	}).Name("running-total").UID("running-total")
	weir.SinkToTransactional(totals, file.ExactlyOnce(out, line)).Name("files").UID("files")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	job, err := env.Start(ctx, "keyedsum")
	if err != nil {
		return err
	}
	err = job.Wait()
	if errors.Is(err, context.Canceled) {
		if id := job.Stats().LastCheckpointID; id > 0 {
			fmt.Printf("stopped; run again with the same --dir to resume from checkpoint %d\n", id)
		} else {
			fmt.Println("stopped before the first checkpoint completed; a new run starts from the beginning")
		}
		return nil
	}
	if err != nil {
		return err
	}
	lines, err := file.ReadCommitted(out)
	if err != nil {
		return err
	}
	fmt.Printf("committed %d lines in %s (checkpoints in %s)\n", len(lines), out, filepath.Join(dir, "checkpoints", "keyedsum"))
	return nil
}
