package bench

import (
	"math/rand/v2"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/weak"
)

// weakSimRounds are the rounds of the scale section's simulation.
const weakSimRounds = 10_000

// simulateScale is successAtScale's simulation of the scale section's
// parameters: the pure snapshot machine, no job. The report prints it as
// "weak.SuccessAtScale" (the simulation's name when it lived in
// internal/weak), so reports stay comparable across versions.
func simulateScale(o weakOptions) (global, perTask *float64) {
	g, p := successAtScale(o.scaleTasks, o.scaleFailure, weakSimRounds, 1)
	return &g, &p
}

// successAtScale measures why per-task snapshots help, on weak.Snapshots
// itself: a barrier checkpoint completes only if every task's snapshot
// does, a weak task snapshot on its own. tasks tasks take rounds rounds
// of snapshots (a Request each), and each task's snapshot fails (is
// declined) with probability pFail, drawn from seed. global is the share
// of rounds in which every task's snapshot completed, which is what a
// barrier checkpoint of the same job would have needed (about
// (1-pFail)^tasks); perTask is the share of task snapshots completed,
// each a restore point on its own (about 1-pFail).
func successAtScale(tasks int, pFail float64, rounds int, seed uint64) (global, perTask float64) {
	if tasks < 1 || rounds < 1 {
		return 0, 0
	}
	r := rand.New(rand.NewPCG(seed, 0))
	ids := make([]checkpoint.TaskID, tasks)
	for i := range ids {
		ids[i] = checkpoint.TaskID{Vertex: i}
	}
	now := time.Unix(0, 0)
	s := weak.NewSnapshots(weak.Config{}, ids)
	for _, t := range ids {
		s.Step(weak.Running{Task: t, Now: now})
	}
	whole, done := 0, 0
	for range rounds {
		now = now.Add(time.Second)
		ok := 0
		for _, a := range s.Step(weak.Request{Now: now}) {
			tr := a.(weak.Trigger)
			if r.Float64() < pFail {
				s.Step(weak.Decline{Task: tr.Task, ID: tr.ID, Reason: "injected", Now: now})
				continue
			}
			for _, p := range s.Step(weak.Ack{Task: tr.Task, ID: tr.ID, Now: now}) {
				for _, c := range s.Step(weak.Persisted{ID: p.(weak.Persist).ID, Now: now}) {
					if _, completed := c.(weak.Complete); completed {
						ok++
					}
				}
			}
		}
		done += ok
		if ok == tasks {
			whole++
		}
	}
	return float64(whole) / float64(rounds), float64(done) / float64(tasks*rounds)
}
