package app

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

const jobManagerUsage = "the JobManager's rpc address HOST:PORT"

func (p *Program) listCommand() *cobra.Command {
	var cf clientFlags
	c := &cobra.Command{
		Use:         "list",
		Short:       "List the JobManager's jobs",
		Args:        cobra.NoArgs,
		Annotations: envAnnotation,
		RunE: func(c *cobra.Command, _ []string) error {
			cl, err := cf.dial(c.Context(), p)
			if err != nil {
				return err
			}
			defer cl.Close()
			jobs, err := cl.List(c.Context())
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
		},
	}
	cf.register(c.Flags(), "127.0.0.1:6123", jobManagerUsage)
	return c
}

func (p *Program) cancelCommand() *cobra.Command {
	var cf clientFlags
	c := &cobra.Command{
		Use:         "cancel JOB",
		Short:       "Cancel a job on the JobManager",
		Args:        exactlyOneJob,
		Annotations: envAnnotation,
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := cf.dial(c.Context(), p)
			if err != nil {
				return err
			}
			defer cl.Close()
			if err := cl.Cancel(c.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(p.stderr(), "job %s: cancel requested\n", args[0])
			return nil
		},
	}
	cf.register(c.Flags(), "127.0.0.1:6123", jobManagerUsage)
	return c
}

func (p *Program) checkpointsCommand() *cobra.Command {
	var cf clientFlags
	c := &cobra.Command{
		Use:         "checkpoints JOB",
		Short:       "Show a job's checkpoint counts and recent checkpoints (from the JobManager)",
		Args:        exactlyOneJob,
		Annotations: envAnnotation,
		RunE: func(c *cobra.Command, args []string) error {
			cl, err := cf.dial(c.Context(), p)
			if err != nil {
				return err
			}
			defer cl.Close()
			r, err := cl.Checkpoints(c.Context(), args[0])
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
				fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%d\t%d/%d\t%s\n", h.GetId(), h.GetKind(), h.GetStatus(),
					unixMillis(h.GetTriggerUnixMillis()), time.Duration(h.GetDurationMillis())*time.Millisecond,
					h.GetStateSize(), h.GetAcknowledged(), h.GetSubtasks(), h.GetFailure())
			}
			return w.Flush()
		},
	}
	cf.register(c.Flags(), "127.0.0.1:6123", jobManagerUsage)
	return c
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
