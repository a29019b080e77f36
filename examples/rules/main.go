// Command rules is the broadcast state example of docs/api.md: card
// transactions keyed by account from one source, alerting rules from a
// second one, and an alert whenever a transaction matches a rule. Rules
// are added, changed and removed while the job runs; every subtask holds
// them all in broadcast state, which each checkpoint stores once.
//
//	go run ./examples/rules --events 200000 --dir /tmp/rules
//	go run ./examples/rules --rules rules.txt --dir /tmp/rules
//
// Without --rules the rule updates are a built-in script, one every
// --rule-every transactions' time; with it they are the file's lines,
// "put <name> <min-amount>" or "remove <name>". Alerts, one
// "account,rule,amount,hits" line each, are committed exactly once into
// <dir>/out. Stop it (Ctrl-C) and run it again with the same --dir: it
// resumes from its newest checkpoint.
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
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/datagen"
	"github.com/weirstream/weir/connectors/file"
)

// Transaction is one card payment.
type Transaction struct {
	Seq     int64
	Account string
	Amount  int64
}

// RuleUpdate adds or changes (Remove false) or removes the rule Name.
type RuleUpdate struct {
	Name      string
	MinAmount int64
	Remove    bool
}

// Alert is a transaction that matched a rule; Hits counts the rule's
// alerts for the account since the rule was last added or changed.
type Alert struct {
	Account string
	Rule    string
	Amount  int64
	Hits    int64
}

func line(a Alert, dst []byte) []byte {
	return fmt.Appendf(dst, "%s,%s,%d,%d", a.Account, a.Rule, a.Amount, a.Hits)
}

// transaction is a pure function of its index: the source is replayable.
func transaction(i int64) Transaction {
	return Transaction{Seq: i, Account: "acct-" + strconv.FormatInt(i*7919%200, 10), Amount: (i * 104729) % 1000}
}

// script is the built-in sequence of rule updates: rules are added,
// changed and removed, over and over.
var script = []RuleUpdate{
	{Name: "large", MinAmount: 990},
	{Name: "medium", MinAmount: 950},
	{Name: "large", MinAmount: 995}, // changed
	{Name: "medium", Remove: true},
	{Name: "huge", MinAmount: 999},
	{Name: "large", Remove: true},
	{Name: "huge", Remove: true},
}

// parseRule reads "put <name> <min-amount>" or "remove <name>".
func parseRule(l string) (RuleUpdate, error) {
	f := strings.Fields(l)
	switch {
	case len(f) == 3 && f[0] == "put":
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return RuleUpdate{}, fmt.Errorf("rule line %q: min amount: %w", l, err)
		}
		return RuleUpdate{Name: f[1], MinAmount: n}, nil
	case len(f) == 2 && f[0] == "remove":
		return RuleUpdate{Name: f[1], Remove: true}, nil
	}
	return RuleUpdate{}, fmt.Errorf("rule line %q: want \"put <name> <min-amount>\" or \"remove <name>\"", l)
}

// rulesState is the broadcast state: rule name to minimum amount.
var rulesState = weir.BroadcastStateOf[string, int64]("rules")

// alerting applies the rules to each account's transactions.
type alerting struct {
	rules *weir.BroadcastState[string, int64]
	hits  weir.MapState[string, int64] // per account: rule → alerts
}

func (a *alerting) Open(_ context.Context, kc *weir.KeyedContext[string]) (err error) {
	if a.rules, err = weir.GetBroadcastState(kc, rulesState); err != nil {
		return err
	}
	a.hits, err = weir.GetMapState[string, int64](kc, "hits")
	return err
}

// ProcessElement reads the rules (read-only here) with the transaction's
// account current.
func (a *alerting) ProcessElement(t Transaction, kc *weir.KeyedContext[string], out *weir.Collector[Alert]) error {
	for name, min := range a.rules.All() {
		if t.Amount >= min {
			n, _ := a.hits.Get(name)
			n++
			a.hits.Put(name, n)
			out.Collect(Alert{Account: kc.CurrentKey(), Rule: name, Amount: t.Amount, Hits: n})
		}
	}
	return nil
}

// ProcessBroadcastElement runs on every subtask for every update: it
// changes the rules, and resets the rule's hits of every account.
func (a *alerting) ProcessBroadcastElement(u RuleUpdate, bc *weir.KeyedBroadcastContext[string], _ *weir.Collector[Alert]) error {
	if u.Remove {
		a.rules.Remove(u.Name)
	} else {
		a.rules.Put(u.Name, u.MinAmount)
	}
	return bc.ApplyToKeyedState("hits", func(string) error {
		a.hits.Remove(u.Name)
		return nil
	})
}

// options are the example's parameters.
type options struct {
	events      int64
	rate        float64
	ruleEvery   int64
	rulesFile   string
	dir         string
	parallelism int
}

func main() {
	var o options
	flag.Int64Var(&o.events, "events", 200_000, "transactions to generate")
	flag.Float64Var(&o.rate, "rate", 50_000, "transactions per second")
	flag.Int64Var(&o.ruleEvery, "rule-every", 10_000, "built-in script: one rule update per this many transactions' time")
	flag.StringVar(&o.rulesFile, "rules", "", `file of rule updates, "put <name> <min-amount>" or "remove <name>" per line (default: the built-in script)`)
	flag.StringVar(&o.dir, "dir", "rules-data", "folder for checkpoints and output")
	flag.IntVar(&o.parallelism, "parallelism", 2, "subtasks per operator")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "rules:", err)
		os.Exit(1)
	}
}

// build adds the job to env; alerts go to out.
func build(env *weir.Env, o options, out string) {
	txs := weir.FromSource(env, datagen.New(transaction, datagen.WithCount(o.events), datagen.WithRate(o.rate))).
		Name("transactions").UID("transactions")
	var updates weir.Stream[RuleUpdate]
	if o.rulesFile != "" {
		lines := weir.FromSource(env, file.Lines(o.rulesFile)).Name("rule-file").UID("rule-file").Parallelism(1)
		updates = weir.FlatMap(lines, func(l string, out *weir.Collector[RuleUpdate]) error {
			if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
				return nil
			}
			u, err := parseRule(l)
			out.Collect(u)
			return err
		}).Name("parse-rules").UID("parse-rules").Parallelism(1)
	} else {
		// As many updates as fit the transactions' run, paced with them.
		n := max(1, o.events/o.ruleEvery)
		updates = weir.FromSource(env, datagen.New(func(i int64) RuleUpdate { return script[i%int64(len(script))] },
			datagen.WithCount(n), datagen.WithRate(o.rate/float64(o.ruleEvery)))).Name("rule-script").UID("rule-script").Parallelism(1)
	}
	// One producer of rule updates: every subtask applies them in the same
	// order, so all hold the same rules.
	alerts := weir.KeyedBroadcastProcess(weir.KeyBy(txs, func(t Transaction) string { return t.Account }),
		weir.Broadcast(updates, rulesState),
		func() weir.KeyedBroadcastProcessFunction[string, Transaction, RuleUpdate, Alert] { return &alerting{} }).
		Name("alerting").UID("alerting")
	weir.SinkToTransactional(alerts, file.ExactlyOnce(out, line)).Name("alerts").UID("alerts")
}

func run(ctx context.Context, o options) error {
	out := filepath.Join(o.dir, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	env := weir.NewEnv(
		weir.WithCheckpointInterval(200*time.Millisecond),
		weir.WithCheckpointDir(filepath.Join(o.dir, "checkpoints")),
		weir.WithParallelism(o.parallelism),
	)
	build(env, o, out)
	job, err := env.Start(ctx, "rules")
	if err != nil {
		return err
	}
	err = job.Wait()
	if errors.Is(err, context.Canceled) {
		fmt.Println("stopped; run again with the same --dir to resume from its newest checkpoint")
		return nil
	}
	if err != nil {
		return err
	}
	lines, err := file.ReadCommitted(out)
	if err != nil {
		return err
	}
	fmt.Printf("committed %d alerts in %s\n", len(lines), out)
	return nil
}
