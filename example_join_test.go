package weir_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/connectors/file"
)

// Order and Payment are the two sides of the regular join example.
type Order struct {
	ID    int64
	Item  string
	Total int64
}

// Payment pays for an order.
type Payment struct {
	Order  int64
	Method string
}

// orderPayments is a regular (unbounded) keyed join: each side's records
// wait in keyed state for the other's, whatever their time. Nothing ever
// expires, so the state grows with the number of keys; a real job bounds
// it with state time-to-live (TTL: expire an order nobody paid for after
// a day), or uses IntervalJoin or JoinWindow when the match has a time
// bound.
type orderPayments struct {
	order    weir.ValueState[Order]
	payments weir.ListState[Payment]
}

func (j *orderPayments) Open(_ context.Context, kc *weir.KeyedContext[int64]) (err error) {
	if j.order, err = weir.GetValueState[Order](kc, "order"); err != nil {
		return err
	}
	j.payments, err = weir.GetListState[Payment](kc, "payments")
	return err
}

// ProcessElement1 takes an order: it joins the payments that came first.
func (j *orderPayments) ProcessElement1(o Order, _ *weir.KeyedContext[int64], out *weir.Collector[string]) error {
	j.order.Update(o)
	for _, p := range j.payments.Get() {
		out.Collect(fmt.Sprintf("order %d (%s, %d) paid by %s", o.ID, o.Item, o.Total, p.Method))
	}
	j.payments.Clear()
	return nil
}

// ProcessElement2 takes a payment: it joins its order, or waits for it.
func (j *orderPayments) ProcessElement2(p Payment, _ *weir.KeyedContext[int64], out *weir.Collector[string]) error {
	o, ok := j.order.Value()
	if !ok {
		j.payments.Add(p)
		return nil
	}
	out.Collect(fmt.Sprintf("order %d (%s, %d) paid by %s", o.ID, o.Item, o.Total, p.Method))
	return nil
}

// A regular keyed join with ConnectKeyed and CoProcess: orders and their
// payments, each side kept in keyed state until the other arrives.
func ExampleCoProcess() {
	dir, err := os.MkdirTemp("", "weir-join-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "out")

	env := weir.NewEnv(weir.WithParallelism(2), weir.WithCheckpointDir(filepath.Join(dir, "checkpoints")))
	items := []string{"book", "lamp", "pen"}
	orders := weir.FromSource(env, datagen.New(func(i int64) Order {
		return Order{ID: i, Item: items[i%3], Total: 10 * (i + 1)}
	}, datagen.WithCount(3))).UID("orders")
	methods := []string{"card", "cash"}
	payments := weir.FromSource(env, datagen.New(func(i int64) Payment {
		return Payment{Order: i % 3, Method: methods[i%2]}
	}, datagen.WithCount(4))).UID("payments")

	joined := weir.CoProcess(weir.ConnectKeyed(
		weir.KeyBy(orders, func(o Order) int64 { return o.ID }),
		weir.KeyBy(payments, func(p Payment) int64 { return p.Order }),
	), func() weir.KeyedCoProcessFunction[int64, Order, Payment, string] { return &orderPayments{} }).UID("join")
	weir.SinkToTransactional(joined, file.ExactlyOnce(out, appendLine)).UID("out")

	if err := env.Execute(context.Background(), "orders"); err != nil {
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
	// order 0 (book, 10) paid by card
	// order 0 (book, 10) paid by cash
	// order 1 (lamp, 20) paid by cash
	// order 2 (pen, 30) paid by card
}
