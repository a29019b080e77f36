package weir_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/connectors/file"
)

// Event is a billing event of an account.
type Event struct {
	Account string
	Amount  int64
}

// String formats the running sum of an account.
func (e Event) String() string { return e.Account + "=" + strconv.FormatInt(e.Amount, 10) }

func newEvent(i int64) Event { return Event{Account: "acct-" + strconv.FormatInt(i%3, 10), Amount: 1} }

func appendLine(s string, dst []byte) []byte { return append(dst, s...) }

// The package documentation's job: running sums per account, written
// exactly once into part files, with checkpoints every second.
func Example() {
	dir, err := os.MkdirTemp("", "weir-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "out")

	env := weir.NewEnv(
		weir.WithParallelism(2),
		weir.WithCheckpointInterval(time.Second),
		weir.WithCheckpointDir(filepath.Join(dir, "checkpoints")),
	)
	events := weir.FromSource(env, datagen.New(newEvent, datagen.WithCount(300))).UID("events")
	byAccount := weir.KeyBy(events, func(e Event) string { return e.Account })
	sums := weir.Reduce(byAccount, func(a, b Event) Event { a.Amount += b.Amount; return a }).UID("sum")
	weir.SinkToTransactional(weir.Map(sums, Event.String), file.ExactlyOnce(out, appendLine)).UID("out")

	job, err := env.Start(context.Background(), "billing")
	if err != nil {
		panic(err)
	}
	if err := job.Wait(); err != nil {
		panic(err)
	}
	lines, err := file.ReadCommitted(out)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(lines), "updates,", job.Stats().State)
	// Output: 300 updates, FINISHED
}
