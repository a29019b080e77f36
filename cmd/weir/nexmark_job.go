package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/app"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	nxq "github.com/weirstream/weir/internal/jobs/nexmark"
)

const nexmarkLong = `nexmark runs one query of the Nexmark benchmark (the queries Flink's
Nexmark suite runs: q0-q5 and q7-q22) over events 0 … N-1 of the Nexmark
generator (people, auctions and bids in the ratio 1:3:46; event n's
dateTime is --base-time + n/--first-event-rate; watermarks dateTime - 4 s,
as Flink's Nexmark DDL). The generator is a pure function of the event
number, so the same flags give the same events at any parallelism and
after any failure.

The query's rows go through an exactly-once file sink into --out: one CSV
line per row (RFC 4180), the columns of the query's SELECT list in order,
times as epoch milliseconds. A query whose result updates (a regular
GROUP BY, TopN, deduplication) writes a changelog: each line starts with
Flink's row kind, +I (insert), -U (retract the row before an update), +U
(the row after it) or -D (delete), and applying the lines in commit order
(add +I/+U rows, remove -U/-D rows) gives the final table.

--verify computes the query once more in this process, with a
hand-written loop over the same events (no engine), and checks that the
committed rows equal its rows as multisets (for a changelog, after
applying both). Processing-time queries (q12) depend on the wall clock:
--verify checks what does not. Kill a run and start the same command
again, or add --inject-failures F: --verify passes all the same.

docs/nexmark.md describes the queries, the output and the benchmark.`

// nexmarkFlags are the nexmark job's flags.
type nexmarkFlags struct {
	jf        jobFlags
	gen       nexmarkGenFlags
	query     string
	out       string
	sideInput string
	verify    bool
}

// nexmarkJob is `weir run nexmark`.
func nexmarkJob() app.Job {
	return app.Job{
		Name:  "nexmark",
		Short: "One Nexmark benchmark query over generated auctions and bids, exactly once into files",
		Long:  nexmarkLong,
		Define: func(fs *pflag.FlagSet) app.Run {
			n := &nexmarkFlags{}
			n.register(fs)
			return app.Run{
				Configure: func(_ context.Context, cfg *weir.Config) error { return n.configure(fs, cfg) },
				Build:     n.build,
				Summary:   n.jf.faultSummary,
				Finish:    n.finish,
			}
		},
	}
}

func (n *nexmarkFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&n.query, "query", "", "the query to run: "+strings.Join(nxq.Names(), ", ")+" (required)")
	n.gen.register(fs, 1_000_000, true)
	fs.StringVar(&n.out, "out", "", "folder for the committed part files (default <state-dir>/out)")
	fs.StringVar(&n.sideInput, "side-input", "", "q13's side input: a file of key,value lines (default: the table of Flink's benchmark, keys 0 … 9999 with value = key, built in memory)")
	fs.BoolVar(&n.verify, "verify", false, "after the run, check the committed rows against a hand-written computation of the query over the same events")
	n.jf.register(fs, "1s")
	app.MarkPath(fs, "out")
	app.MarkPath(fs, "side-input")
	app.MarkClientOnly(fs, "verify")
}

// options checks the job's own flags and returns the query and its
// parameters (Out and SideInput as the flags give them).
func (n *nexmarkFlags) options() (*nxq.Query, nxq.Params, error) {
	if n.query == "" {
		return nil, nxq.Params{}, fmt.Errorf("--query is required: one of %s (e.g. --query q5)", strings.Join(nxq.Names(), ", "))
	}
	q, err := nxq.Lookup(n.query)
	if err != nil {
		return nil, nxq.Params{}, fmt.Errorf("--query: %v", err)
	}
	gen, err := n.gen.config()
	if err != nil {
		return nil, nxq.Params{}, err
	}
	return q, nxq.Params{Gen: gen, Out: n.out, SideInput: n.sideInput}, nil
}

// configure checks the flags where the job is launched; the default --out
// is set as a flag so that a submitted job carries them.
func (n *nexmarkFlags) configure(fs *pflag.FlagSet, cfg *weir.Config) error {
	q, _, err := n.options()
	if err != nil {
		return usagef("%v", err)
	}
	if err := refuseIneffective(fs,
		ineffective{flag: "side-input", when: q.Name != "q13", where: "with --query " + q.Name,
			instead: "only q13 joins a side input; drop --side-input, or run --query q13"},
		verifyDetached(fs),
	); err != nil {
		return err
	}
	if err := n.jf.configure(fs, cfg); err != nil {
		return err
	}
	if err := n.jf.quickRestarts(cfg); err != nil {
		return err
	}
	stateDir := hooks.Config(cfg).String(config.CheckpointsDir)
	if n.out == "" {
		if err := fs.Set("out", filepath.Join(stateDir, "out")); err != nil {
			return err
		}
	}
	return checkWritableDir("--out", n.out)
}

// build declares the graph, in a local run and in every cluster role.
func (n *nexmarkFlags) build(env *weir.Env) error {
	q, p, err := n.options()
	if err != nil {
		return usagef("%v", err)
	}
	n.jf.apply(env, n.gen.events)
	return nxq.BuildQuery(env, q, n.gen.events, n.gen.rateLimit, p)
}

// finish reports the committed lines and, with --verify, checks them.
func (n *nexmarkFlags) finish(context.Context, app.Outcome) error {
	q, p, err := n.options()
	if err != nil {
		return err
	}
	lines, err := file.ReadCommitted(n.out)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "committed %d lines to %s\n", len(lines), n.out)
	if !n.verify {
		return nil
	}
	if err := nxq.Verify(q, p, n.gen.events, lines); err != nil {
		return fmt.Errorf("verify: committed output is wrong: %v", err)
	}
	switch {
	case q.ProcessingTime:
		fmt.Fprintf(os.Stderr, "verify: committed output passes %s's processing-time check (what does not depend on the wall clock equals the reference computation)\n", q.Name)
	case q.Changelog:
		fmt.Fprintln(os.Stderr, "verify: committed output equals the reference computation exactly, after applying the changelog")
	default:
		fmt.Fprintln(os.Stderr, "verify: committed output equals the reference computation exactly")
	}
	return nil
}
