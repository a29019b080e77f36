package kafka

import "fmt"

// owns reports whether subtask s of p reads partition q. Ownership is a
// pure function of the partition and the parallelism, so every subtask
// agrees on it without talking to the others, before and after a rescale,
// for partitions the checkpoint holds and for ones found later.
func owns(q int32, subtask, parallelism int) bool {
	return int(q)%parallelism == subtask
}

// startPlan is where a subtask starts reading the partitions it owns when
// it opens.
type startPlan struct {
	// restored are the partitions whose offsets the checkpoint holds.
	restored map[int32]int64
	// fresh are resolved with WithStartOffset (a start without a checkpoint).
	fresh []int32
	// earliest are unknown to the checkpoint: created since, so read from
	// their first record.
	earliest []int32
}

// planStart decides which partitions of the n the topic has subtask s of
// p reads, and from where.
//
// union holds every partition offset of the restored checkpoint (union
// list state, the same for every subtask). An empty union with restored
// set is a checkpoint of the older format, whose elements the runtime dealt
// out round-robin as legacy: then the subtask reads exactly the partitions
// it was handed, and no other partition below n, since it cannot tell one
// another subtask was handed from one the checkpoint lacks.
func planStart(restored bool, union, legacy []partitionOffset, n int32, subtask, parallelism int) (startPlan, error) {
	sp := startPlan{restored: map[int32]int64{}}
	if !restored {
		for q := range n {
			if owns(q, subtask, parallelism) {
				sp.fresh = append(sp.fresh, q)
			}
		}
		return sp, nil
	}
	if len(union) > 0 && len(legacy) > 0 {
		return sp, fmt.Errorf("the checkpoint holds partition offsets in both the union and the round-robin format: it was not written by this source")
	}
	all := map[int32]int64{}
	for _, e := range append(union, legacy...) {
		if _, dup := all[e.Partition]; dup {
			return sp, fmt.Errorf("the checkpoint holds partition %d twice: it was not written by this source", e.Partition)
		}
		if e.Partition < 0 || e.Partition >= n {
			return sp, fmt.Errorf("the checkpoint holds partition %d of a topic that has %d: restore into a topic with the same partitions", e.Partition, n)
		}
		all[e.Partition] = e.Next
	}
	if len(union) == 0 {
		sp.restored = all
		return sp, nil
	}
	for q := range n {
		if !owns(q, subtask, parallelism) {
			continue
		}
		if next, ok := all[q]; ok {
			sp.restored[q] = next
		} else {
			sp.earliest = append(sp.earliest, q)
		}
	}
	return sp, nil
}

// newlyOwned lists the partitions in [known, n) that subtask s of p owns:
// what a discovery that saw n partitions, after known, adds.
func newlyOwned(known, n int32, subtask, parallelism int) []int32 {
	var out []int32
	for q := known; q < n; q++ {
		if owns(q, subtask, parallelism) {
			out = append(out, q)
		}
	}
	return out
}
