package runtime

// Reactive mode's view of a cluster job (docs/rescaling.md, "Reactive
// mode"; the rule is internal/reactive, its driver internal/cluster).

// ReactiveShape returns the job's parallelism as reactive mode counts it:
// p, the largest parallelism of the operators the program did not pin
// (Stream.Parallelism); pinned, the largest parallelism of those it did
// (1 without any: the least slots the job needs under slot sharing); and
// max, the smallest max parallelism (key groups) of the unpinned
// operators, the most they can take. A job whose every operator is
// pinned has p = pinned and max = pinned: there is nothing to rescale.
func (j *ClusterJob) ReactiveShape() (p, pinned, max int) {
	pinned = 1
	for _, v := range j.jm.jg.Vertices {
		for _, n := range v.Chain {
			if n.ExplicitParallelism {
				pinned = maxInt(pinned, n.Parallelism)
				continue
			}
			p = maxInt(p, n.Parallelism)
			if max == 0 || n.MaxParallelism < max {
				max = n.MaxParallelism
			}
		}
	}
	if p == 0 {
		return pinned, pinned, pinned
	}
	return p, pinned, max
}

// ParallelismAt returns every operator's parallelism by uid with the
// unpinned ones at p, as JobSpec.Parallelism records it: the JobManager
// starts the job again at it (a rescale of a job that cannot take a
// checkpoint first, e.g. one waiting for slots it lost).
func (j *ClusterJob) ParallelismAt(p int) map[string]int {
	out := map[string]int{}
	for _, v := range j.jm.jg.Vertices {
		for _, n := range v.Chain {
			out[n.UID] = n.Parallelism
			if !n.ExplicitParallelism {
				out[n.UID] = p
			}
		}
	}
	return out
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}
