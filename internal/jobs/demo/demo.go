// Package demo is weir's built-in demo job, specified exactly because it is
// also the exactly-once test: event i has account (i*7919) mod K and amount
// ((i*2654435761) mod 2^32) mod 1000 + 1; the job keys by account, keeps the
// count and the sum of amounts per account, and for every event emits the
// line "i,account,count,total" into an exactly-once file sink.
//
// Each account's events are emitted by one source subtask in index order
// and reach the aggregator through one FIFO channel, so the output is a pure
// function of (N, K): Expected computes it without the engine, and a run
// with failures must commit exactly that multiset of lines.
//
// Owns: the demo job and the function its output must equal. Must not
// touch: engine internals; it is built with the public API, so its tests
// test what users get.
package demo

import (
	"context"
	"strconv"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/connectors/file"
)

// Event is one generated event.
type Event struct {
	I       int64
	Account int64
	Amount  int64
}

// Result is the aggregate after one event.
type Result struct {
	I, Account, Count, Total int64
}

// AppendLine appends "i,account,count,total".
func (r Result) AppendLine(dst []byte) []byte {
	dst = strconv.AppendInt(dst, r.I, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.Account, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, r.Count, 10)
	dst = append(dst, ',')
	return strconv.AppendInt(dst, r.Total, 10)
}

// Account returns the account of event i among k accounts.
func Account(i int64, k int64) int64 {
	return int64((uint64(i) % uint64(k)) * 7919 % uint64(k))
}

// Amount returns the amount of event i, in [1, 1000].
func Amount(i int64) int64 {
	return int64(uint32(uint64(i)*2654435761)%1000) + 1
}

// Generator returns the event generator for k accounts.
//
// It is a method value, not a closure: Generator inlines into its
// callers, and a closure inlined with it is copied into the caller, where
// Go did not inline Account and Amount into the copy (two CALLs per event
// in the keyed-sum profile, issue 36). The method is compiled once, with
// both inlined.
func Generator(k int64) func(i int64) Event { return generator{k}.event }

type generator struct{ k int64 }

func (g generator) event(i int64) Event {
	return Event{I: i, Account: Account(i, g.k), Amount: Amount(i)}
}

// Options are the demo's parameters.
type Options struct {
	Events int64   // 0: unbounded
	Keys   int64   // accounts
	Rate   float64 // events per second, 0: unlimited
	Out    string  // exactly-once file sink folder
}

// Build adds the demo pipeline to env: events -> key by account ->
// aggregate -> exactly-once files.
func Build(env *weir.Env, o Options) {
	results := Aggregate(env, o)
	weir.SinkToTransactional(results, file.ExactlyOnce(o.Out, Result.AppendLine)).Name("files").UID("files")
}

// Aggregate builds the part of the pipeline before the sink, on generated
// events.
func Aggregate(env *weir.Env, o Options) weir.Stream[Result] {
	return AggregateEvents(Events(env, o))
}

// Events is the datagen source of the demo's events.
func Events(env *weir.Env, o Options) weir.Stream[Event] {
	k := o.Keys
	// Every account belongs to one source subtask, so its events reach the
	// aggregator in index order through one channel.
	owner := func(i int64, p int) int { return int(Account(i, k) % int64(p)) }
	return weir.FromSource(env, datagen.New(Generator(k), datagen.WithCount(o.Events), datagen.WithRate(o.Rate), datagen.WithOwner(owner), datagen.WithOwnerPeriod(k))).
		Name("events").UID("events")
}

// AggregateEvents keys events by account and emits each event's running
// count and total. Events of one account must arrive in index order (one
// source subtask, one partition) for the output to be the closed form.
func AggregateEvents(events weir.Stream[Event]) weir.Stream[Result] {
	keyed := weir.KeyBy(events, func(e Event) int64 { return e.Account })
	return weir.Process(keyed, func() weir.KeyedProcessFunction[int64, Event, Result] { return &aggregate{} }).
		Name("aggregate").UID("aggregate")
}

// totals is the per-account state.
type totals struct {
	Count, Total int64
}

type aggregate struct {
	state weir.ValueState[totals]
}

func (a *aggregate) Open(ctx context.Context, kc *weir.KeyedContext[int64]) (err error) {
	a.state, err = weir.GetValueState[totals](kc, "totals")
	return err
}

func (a *aggregate) ProcessElement(e Event, _ *weir.KeyedContext[int64], out *weir.Collector[Result]) error {
	t, _ := a.state.Value()
	t.Count++
	t.Total += e.Amount
	a.state.Update(t)
	out.Collect(Result{I: e.I, Account: e.Account, Count: t.Count, Total: t.Total})
	return nil
}
