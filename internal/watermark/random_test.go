package watermark

import (
	"github.com/weirstream/weir/internal/testutil/coretest"
	"math/rand/v2"
	"testing"
)

// TestRandomInvariants drives valves of 1 to 4 channels with seeded random
// events and checks after every step what the rules promise: the output
// only advances, never beyond what a channel has seen (unless ended or idle
// inputs free it), and is never left behind: when no active channel lags,
// it is exactly their minimum. Idleness is reported once per change.
func TestRandomInvariants(t *testing.T) {
	coretest.Seeds{N: 500}.Run(t, func(seed uint64) {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := 1 + rng.IntN(4)
		v := NewValve(n)
		last := MinWatermark
		idleShown := false
		for step := range 300 {
			ch := rng.IntN(n)
			var ev Event
			switch r := rng.IntN(20); {
			case r < 14:
				ev = Advance{Ch: ch, TS: v.chans[ch].wm/2 + int64(rng.IntN(100)) - 20}
				if v.chans[ch].wm == MinWatermark {
					ev = Advance{Ch: ch, TS: int64(rng.IntN(100))}
				}
			case r < 16:
				ev = Idle{Ch: ch}
			case r < 19:
				ev = Active{Ch: ch}
			default:
				ev = EndOfInput{Ch: ch}
			}
			for _, a := range v.Step(ev) {
				switch a := a.(type) {
				case Emit:
					if a.TS <= last {
						t.Fatalf("seed %d step %d %#v: emitted %d after %d", seed, step, ev, a.TS, last)
					}
					last = a.TS
				case MarkIdle:
					if idleShown {
						t.Fatalf("seed %d step %d: MarkIdle twice", seed, step)
					}
					idleShown = true
				case MarkActive:
					if !idleShown {
						t.Fatalf("seed %d step %d: MarkActive while active", seed, step)
					}
					idleShown = false
				}
			}
			check(t, seed, step, v, last, idleShown)
		}
	})
}

func check(t *testing.T, seed uint64, step int, v *Valve, last int64, idleShown bool) {
	t.Helper()
	if v.Watermark() != last {
		t.Fatalf("seed %d step %d: Watermark() = %d, last emitted %d", seed, step, v.Watermark(), last)
	}
	allIdle, freed := true, false
	highest, lowestActive, active := MinWatermark, MaxWatermark, 0
	for _, c := range v.chans {
		highest = max(highest, c.wm)
		if c.ended {
			freed = true
		}
		if c.idle {
			freed = true
			continue
		}
		allIdle = false
		if c.wm >= v.out {
			active++
			lowestActive = min(lowestActive, c.wm)
		} else if c.aligned {
			t.Fatalf("seed %d step %d: channel at %d below the output %d counts in the minimum", seed, step, c.wm, v.out)
		}
	}
	if v.IsIdle() != allIdle || idleShown != allIdle {
		t.Fatalf("seed %d step %d: IsIdle %v, MarkIdle shown %v, every channel idle %v", seed, step, v.IsIdle(), idleShown, allIdle)
	}
	if allIdle && v.out < highest {
		t.Fatalf("seed %d step %d: all idle at %d below the highest channel watermark %d", seed, step, v.out, highest)
	}
	if !freed && v.out > highest {
		t.Fatalf("seed %d step %d: output %d beyond every channel (highest %d)", seed, step, v.out, highest)
	}
	lagging := 0
	for _, c := range v.chans {
		if !c.idle && c.wm < v.out {
			lagging++
		}
	}
	if lagging == 0 && active > 0 && v.out != lowestActive {
		t.Fatalf("seed %d step %d: no active channel lags, output %d, their minimum %d", seed, step, v.out, lowestActive)
	}
}
