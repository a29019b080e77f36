package cluster

import (
	"context"
	"fmt"

	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/runtime"
)

// guardResolve returns r with a panicking job builder turned into an
// error. Builders are user code and run inside the JobManager (at
// Submit, and again for every unfinished job at each start) and inside
// each TaskManager (at PrepareJob): unguarded, one job's panic would end
// the process and every other job in it, and a recorded job whose
// builder panics would keep the JobManager from ever starting again.
func guardResolve(r Resolver) Resolver {
	return func(ctx context.Context, spec deployment.JobSpec) (g *dataflow.Graph, jc runtime.JobConfig, err error) {
		defer func() {
			if p := recover(); p != nil {
				// No stack: the message goes into job records and
				// listings; the builder panics alike in a local run.
				err = fmt.Errorf("the %s builder panicked on job %s's arguments %q: %v; fix the builder (it must return an error for arguments it cannot use)", spec.Kind, spec.Name, spec.Args, p)
			}
		}()
		g, jc, err = r(ctx, spec)
		if err != nil {
			return g, jc, err
		}
		return g, jc, applyParallelism(spec, g)
	}
}

// applyParallelism sets the parallelism an in-place rescale recorded in
// spec over what the builder chose. A recorded uid the graph lacks means
// the binary's builder changed since the rescale: refuse rather than
// deploy a graph the job's checkpoints were not taken with.
func applyParallelism(spec deployment.JobSpec, g *dataflow.Graph) error {
	if len(spec.Parallelism) == 0 {
		return nil
	}
	seen := 0
	for _, n := range g.Nodes {
		if p, ok := spec.Parallelism[n.UID]; ok {
			n.Parallelism = p
			seen++
		}
	}
	if seen != len(spec.Parallelism) {
		return fmt.Errorf("job %s: its record sets the parallelism of %d operators by uid (%v, from a rescale) but the %s builder made %d of them: run the binary the job was rescaled with", spec.Name, len(spec.Parallelism), spec.Parallelism, spec.Kind, seen)
	}
	return nil
}
