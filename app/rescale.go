package app

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weirstream/weir/internal/rest"
)

// rescaleCommand is 'weir rescale JOB --parallelism N | --vertex UID=N …'.
func (p *Program) rescaleCommand() *cobra.Command {
	var parallelism int
	var vertices []string
	c := p.clientCommand("rescale JOB", "Change a running job's parallelism in place", exactlyOneJob, func(ctx context.Context, cl jobClient, args []string) error {
		req, err := rescaleRequest(parallelism, vertices)
		if err != nil {
			return err
		}
		res, err := cl.Rescale(ctx, args[0], req)
		if err != nil {
			return err
		}
		var parts []string
		for _, name := range slices.Sorted(maps.Keys(res.Parallelism)) {
			parts = append(parts, fmt.Sprintf("%s=%d", name, res.Parallelism[name]))
		}
		fmt.Fprintf(p.stdout(), "rescaled %s on checkpoint %d: %s\n", args[0], res.Checkpoint, strings.Join(parts, ", "))
		return nil
	})
	c.Long = `rescale changes a running job's parallelism without a new submission: the
JobManager takes a checkpoint (unaligned if the job's are: records in
flight are redistributed too), cancels the job and runs it again from
that checkpoint at the new parallelism, in the same run, its state
redistributed by key group. The output is exactly that of a run without
the rescale. --parallelism N applies to every operator whose
parallelism follows the job's default; --vertex UID=N (repeatable) to the
chain of the operator with that uid, and wins. Keyed operators stay at
most pipeline.max-parallelism. The client prints the checkpoint and
the new parallelism of each vertex once the job is being deployed again;
a refused rescale leaves the job running unchanged. A job on a cluster
keeps its new parallelism across JobManager failovers (its record holds
it); a local run (run --rest-address) keeps it until the run ends.` + addressingLong
	c.Flags().IntVar(&parallelism, "parallelism", 0, "new parallelism of every operator that follows the job's default")
	c.Flags().StringArrayVar(&vertices, "vertex", nil, "UID=N: new parallelism of the chain of the operator with uid UID (repeatable)")
	return c
}

// rescaleRequest turns the flags into the REST body.
func rescaleRequest(parallelism int, vertices []string) (rest.ResourceRequirements, error) {
	req := rest.ResourceRequirements{}
	bounds := func(n int) rest.ResourceRequirement {
		return rest.ResourceRequirement{Parallelism: rest.ParallelismBounds{LowerBound: 1, UpperBound: n}}
	}
	if parallelism < 0 {
		return nil, Usagef("--parallelism %d: must be at least 1", parallelism)
	}
	if parallelism > 0 {
		req["*"] = bounds(parallelism)
	}
	for _, v := range vertices {
		uid, n, ok := strings.Cut(v, "=")
		p, err := strconv.Atoi(n)
		if !ok || uid == "" || err != nil || p < 1 {
			return nil, Usagef("--vertex %s: want UID=N, the uid of an operator and a parallelism of at least 1", v)
		}
		req[uid] = bounds(p)
	}
	if len(req) == 0 {
		return nil, Usagef("rescale: give --parallelism N or --vertex UID=N")
	}
	return req, nil
}
