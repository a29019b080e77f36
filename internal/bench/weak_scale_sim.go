package bench

import "github.com/weirstream/weir/internal/weak"

// weakSimRounds are the rounds of weak.SuccessAtScale's simulation.
const weakSimRounds = 10_000

// simulateScale is weak.SuccessAtScale's simulation of the scale
// section's parameters: the pure snapshot machine, no job.
func simulateScale(o weakOptions) (global, perTask *float64) {
	g, p := weak.SuccessAtScale(o.scaleTasks, o.scaleFailure, weakSimRounds, 1)
	return &g, &p
}
