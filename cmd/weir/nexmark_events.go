package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/weirstream/weir/connectors/nexmark"
)

// newNexmarkEventsCmd is `weir tools nexmark-events`: the Nexmark
// generator's events as CSV files, so that anyone can check a query's
// result with another tool.
func newNexmarkEventsCmd() *cobra.Command {
	var (
		gen nexmarkGenFlags
		out string
	)
	c := &cobra.Command{
		Use:   "nexmark-events",
		Short: "Write the Nexmark generator's events to person.csv, auction.csv and bid.csv",
		Long: `nexmark-events writes events 0 … N-1 of the Nexmark generator (the ones
` + "`weir run nexmark`" + ` reads with the same generator flags) into --out:
person.csv, auction.csv and bid.csv, RFC 4180 CSV with a header line of
Flink's Nexmark column names

  person:  ` + nexmark.PersonHeader + `
  auction: ` + nexmark.AuctionHeader + `
  bid:     ` + nexmark.BidHeader + `

and times as epoch milliseconds. Existing files are replaced.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if out == "" {
				return usagef("--out is required: the folder to write person.csv, auction.csv and bid.csv to")
			}
			cfg, err := gen.config()
			if err != nil {
				return usagef("%v", err)
			}
			if err := nexmark.WriteCSV(c.Context(), out, cfg, gen.events); err != nil {
				return err
			}
			p, a, b := nexmark.NewGenerator(cfg).Counts(gen.events)
			fmt.Fprintf(c.ErrOrStderr(), "wrote %d events to %s: %d people, %d auctions, %d bids\n", gen.events, out, p, a, b)
			return nil
		},
	}
	gen.register(c.Flags(), 1_000_000, false)
	c.Flags().StringVar(&out, "out", "", "folder to write person.csv, auction.csv and bid.csv to (created if absent)")
	return c
}
