package runtime

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/jobstatus"
)

// In-place rescaling (docs/rescaling.md). A rescale request takes a
// checkpoint of the running attempt (aligned or unaligned, as the job's
// are) and cancels it once that completed, and Execute then runs the job
// again, at the new parallelism, from its newest checkpoint: that one. Every restore rule that holds for a savepoint restored at
// another parallelism holds here (key groups, operator and union list
// state, the sinks' pending transactions), since it is the same restore;
// what the in-place path saves is the copy, the process and the new
// submission.

// rescaledGraph returns a copy of g at the parallelisms r asks for,
// checked as a job graph: r.Parallelism for every node whose parallelism
// follows the default, and r.Vertices by the uid of any operator of a
// vertex of jg (the running job graph), applied to every node chained in
// that vertex. It also returns the new parallelism by vertex name.
func rescaledGraph(g *dataflow.Graph, jg *dataflow.JobGraph, r jobstatus.Rescale, maxParallelism int) (*dataflow.Graph, map[string]int, error) {
	if r.Parallelism < 0 {
		return nil, nil, fmt.Errorf("rescale: parallelism %d must be at least 1", r.Parallelism)
	}
	if r.Parallelism == 0 && len(r.Vertices) == 0 && len(r.ByVertex) == 0 {
		return nil, nil, fmt.Errorf("rescale: nothing asked: give a parallelism for the job or for vertices by operator uid")
	}
	out := &dataflow.Graph{Nodes: make([]*dataflow.Node, len(g.Nodes))}
	for i, n := range g.Nodes {
		c := *n
		if r.Parallelism > 0 && !c.ExplicitParallelism {
			c.Parallelism = r.Parallelism
		}
		out.Nodes[i] = &c
	}
	for _, uid := range slices.Sorted(maps.Keys(r.Vertices)) {
		p := r.Vertices[uid]
		if p < 1 {
			return nil, nil, fmt.Errorf("rescale: vertex of operator %q: parallelism %d must be at least 1", uid, p)
		}
		v := vertexOfUID(jg, uid)
		if v == nil {
			return nil, nil, fmt.Errorf("rescale: no operator has uid %q; the job's operators are %s", uid, strings.Join(uids(jg), ", "))
		}
		for _, n := range v.Chain {
			out.Nodes[n.ID].Parallelism = p
		}
	}
	for _, id := range slices.Sorted(maps.Keys(r.ByVertex)) {
		p := r.ByVertex[id]
		if id < 0 || id >= len(jg.Vertices) {
			return nil, nil, fmt.Errorf("rescale: the job has no vertex %d; its vertices are 0 to %d", id, len(jg.Vertices)-1)
		}
		if p < 1 {
			return nil, nil, fmt.Errorf("rescale: vertex %d: parallelism %d must be at least 1", id, p)
		}
		for _, n := range jg.Vertices[id].Chain {
			out.Nodes[n.ID].Parallelism = p
		}
	}
	njg, err := dataflow.BuildJobGraph(out, maxParallelism)
	if err != nil {
		return nil, nil, fmt.Errorf("rescale: %w", err)
	}
	changed := false
	par := map[string]int{}
	for _, v := range njg.Vertices {
		par[v.Name()] = v.Parallelism
	}
	for _, v := range jg.Vertices {
		if par[v.Name()] != v.Parallelism {
			changed = true
		}
	}
	if !changed {
		return nil, nil, fmt.Errorf("rescale: every vertex already runs at the parallelism asked for (%v)", par)
	}
	return out, par, nil
}

func vertexOfUID(jg *dataflow.JobGraph, uid string) *dataflow.Vertex {
	for _, v := range jg.Vertices {
		for _, n := range v.Chain {
			if n.UID == uid {
				return v
			}
		}
	}
	return nil
}

func uids(jg *dataflow.JobGraph) []string {
	var out []string
	for _, v := range jg.Vertices {
		for _, n := range v.Chain {
			out = append(out, fmt.Sprintf("%q", n.UID))
		}
	}
	return out
}

// Rescale asks the running job to rescale in place (jobstatus.Rescaler).
func (c *JobControl) Rescale(ctx context.Context, r jobstatus.Rescale) (jobstatus.RescaleResult, error) {
	rep := c.request(ctx, triggerRequest{kind: reqRescale, rescale: r})
	return rep.rescaled, rep.err
}
