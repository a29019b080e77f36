package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// haStoreTimeout bounds one etcd call of the job store; a slower etcd
// fails the write (the caller reports it) rather than hanging a job.
const haStoreTimeout = 10 * time.Second

// haJobStore keeps job records in etcd under high availability: every
// JobManager reads the same records, and a write is fenced by the
// writer's leadership term, so a deposed leader cannot record a job's end
// (or a checkpoint id reservation) over its successor's.
type haJobStore struct {
	ha HA
	l  Leadership
}

var _ jobRecords = haJobStore{}

func (s haJobStore) save(r jobRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("save job %s: %w", r.Spec.Name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), haStoreTimeout)
	defer cancel()
	if err := s.l.SaveJob(ctx, r.Spec.Name, b); err != nil {
		return fmt.Errorf("save job %s in etcd: %w", r.Spec.Name, err)
	}
	return nil
}

func (s haJobStore) load() ([]jobRecord, []error) {
	ctx, cancel := context.WithTimeout(context.Background(), haStoreTimeout)
	defer cancel()
	raw, err := s.ha.Jobs(ctx)
	if err != nil {
		return nil, []error{fmt.Errorf("read job records from etcd: %w", err)}
	}
	var out []jobRecord
	var errs []error
	for name, b := range raw {
		var r jobRecord
		if err := json.Unmarshal(b, &r); err != nil {
			errs = append(errs, fmt.Errorf("job record %s in etcd is corrupt (%v): delete its key under <high-availability.cluster-id>/jobs/ with etcdctl to forget the job, then submit it again with --from its newest chk-N folder", name, err))
			continue
		}
		if err := r.Spec.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("job record %s in etcd: %w", name, err))
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Submitted.Before(out[j].Submitted) })
	return out, errs
}
