package weak

import (
	"math/rand/v2"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
)

// SuccessAtScale measures seed 001's pow argument on Snapshots itself:
// tasks tasks take rounds rounds of snapshots (a Request each), and each
// task's snapshot fails (is declined) with probability pFail, drawn from
// seed. global is the share of rounds in which every task's snapshot
// completed, which is what a barrier checkpoint of the same job would
// have needed (about (1-pFail)^tasks); perTask is the share of task
// snapshots completed, each a restore point on its own (about 1-pFail).
// weir bench weak reports both.
func SuccessAtScale(tasks int, pFail float64, rounds int, seed uint64) (global, perTask float64) {
	if tasks < 1 || rounds < 1 {
		return 0, 0
	}
	r := rand.New(rand.NewPCG(seed, 0))
	ids := make([]checkpoint.TaskID, tasks)
	for i := range ids {
		ids[i] = checkpoint.TaskID{Vertex: i}
	}
	now := time.Unix(0, 0)
	s := NewSnapshots(Config{}, ids)
	for _, t := range ids {
		s.Step(Running{Task: t, Now: now})
	}
	whole, done := 0, 0
	for range rounds {
		now = now.Add(time.Second)
		ok := 0
		for _, a := range s.Step(Request{Now: now}) {
			tr := a.(Trigger)
			if r.Float64() < pFail {
				s.Step(Decline{Task: tr.Task, ID: tr.ID, Reason: "injected", Now: now})
				continue
			}
			for _, p := range s.Step(Ack{Task: tr.Task, ID: tr.ID, Now: now}) {
				for _, c := range s.Step(Persisted{ID: p.(Persist).ID, Now: now}) {
					if _, completed := c.(Complete); completed {
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
