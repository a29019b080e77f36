package app

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// clientCommand is a command that talks to a job's manager: it connects
// to the JobManager (--jobmanager, --connect-timeout) or a local run's
// REST API (--rest-address), runs do with the client and closes it.
func (p *Program) clientCommand(use, short string, args cobra.PositionalArgs, do func(ctx context.Context, cl jobClient, args []string) error) *cobra.Command {
	var af addressFlags
	c := &cobra.Command{
		Use:         use,
		Short:       short,
		Long:        short + "." + addressingLong,
		Args:        args,
		Annotations: envAnnotation,
	}
	c.RunE = func(c *cobra.Command, args []string) error {
		cl, err := af.open(c.Context(), c.Flags(), p)
		if err != nil {
			return err
		}
		defer cl.Close()
		return do(c.Context(), cl, args)
	}
	af.register(c.Flags())
	return c
}

func (p *Program) listCommand() *cobra.Command {
	return p.clientCommand("list", "List the jobs of a JobManager or a local run", cobra.NoArgs, func(ctx context.Context, cl jobClient, _ []string) error {
		jobs, err := cl.List(ctx)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(p.stdout(), 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "JOB\tKIND\tSTATE\tSTARTED\tENDED\tFAILURE")
		for _, j := range jobs {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", j.GetName(), j.GetKind(), j.GetState(),
				unixMillis(j.GetStartUnixMillis()), unixMillis(j.GetEndUnixMillis()), j.GetFailure())
		}
		return w.Flush()
	})
}

func (p *Program) cancelCommand() *cobra.Command {
	return p.clientCommand("cancel JOB", "Cancel a job", exactlyOneJob, func(ctx context.Context, cl jobClient, args []string) error {
		if err := cl.Cancel(ctx, args[0]); err != nil {
			return err
		}
		fmt.Fprintf(p.stderr(), "job %s: cancel requested\n", args[0])
		return nil
	})
}

func (p *Program) checkpointsCommand() *cobra.Command {
	return p.clientCommand("checkpoints JOB", "Show a job's checkpoint counts and recent checkpoints", exactlyOneJob, func(ctx context.Context, cl jobClient, args []string) error {
		r, err := cl.Checkpoints(ctx, args[0])
		if err != nil {
			return err
		}
		out := p.stdout()
		fmt.Fprintf(out, "job %s: %d completed, %d failed, %d restored\n", args[0], r.GetCompleted(), r.GetFailed(), r.GetRestored())
		if len(r.GetHistory()) == 0 {
			return nil
		}
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tKIND\tSTATUS\tTRIGGERED\tDURATION\tSIZE\tACKS\tFAILURE")
		for _, h := range r.GetHistory() {
			failure := h.GetFailure()
			if c := h.GetFailureCause(); c != "" {
				failure = "[" + c + "] " + failure
			}
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%d\t%d/%d\t%s\n", h.GetId(), h.GetKind(), h.GetStatus(),
				unixMillis(h.GetTriggerUnixMillis()), time.Duration(h.GetDurationMillis())*time.Millisecond,
				h.GetStateSize(), h.GetAcknowledged(), h.GetSubtasks(), failure)
		}
		return w.Flush()
	})
}

func exactlyOneJob(c *cobra.Command, args []string) error {
	if len(args) != 1 {
		return Usagef("%s takes one JOB name, got %d arguments (see %s --help)", c.Name(), len(args), c.CommandPath())
	}
	return nil
}

// unixMillis renders a timestamp in UTC, "-" for none.
func unixMillis(ms int64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}
