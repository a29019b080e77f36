package cluster

import "github.com/weirstream/weir/internal/deployment"

// jobSlots is a job's deployment.Slots over the Dispatcher's pool.
type jobSlots struct {
	d   *Dispatcher
	job string
	// released wakes the other jobs once this one's slots are free.
	released func(job string)
}

func (s *jobSlots) Allocate(logical []int) (map[int]deployment.Placement, string) {
	placed, shortage := s.d.allocate(s.job, logical)
	if shortage != "" {
		return nil, shortage
	}
	out := make(map[int]deployment.Placement, len(placed))
	for l, tm := range placed {
		out[l] = deployment.Placement{TM: tmGateway{tm: tm}, DataAddress: tm.DataAddress}
	}
	return out, ""
}

// Release frees the job's slots and wakes the jobs that may wait for
// them (a waiting job otherwise tries again only every 10 s).
func (s *jobSlots) Release() {
	s.d.release(s.job)
	if s.released != nil {
		s.released(s.job)
	}
}
