package registry

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/testutil/coretest"
)

// TestModel drives the registry through seeded random runs of a job with
// incremental checkpoints — triggers (each store uploading new files and
// reusing files of completed checkpoints), completions with retention,
// aborts, crashes that rebuild the registry from the retained checkpoints —
// (with up to two checkpoints in flight) against a naive model that
// recomputes, from scratch, which files the
// retained checkpoints reference. After every step the shared area must
// hold every file a retained or in-flight checkpoint references, and once
// nothing is in flight exactly the files of the retained checkpoints.
func TestModel(t *testing.T) {
	coretest.Seeds{First: 1, N: 200}.Run(t, func(seed uint64) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, seed) })
	})
}

type chk struct {
	id    checkpoint.ID
	files []string
}

func runModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed))
	const retained = 3
	reg := New()
	area := map[string]bool{}          // the shared area's contents
	var done []chk                     // retained, completed, ascending
	pending := map[checkpoint.ID]chk{} // in flight
	confirmed := map[string]bool{}     // files a task may skip: of completed checkpoints
	live := []string{}                 // files of the "store" now
	next := checkpoint.ID(1)
	fileSeq := 0
	del := func(names []string, why string) {
		for _, n := range names {
			for _, c := range done {
				if slices.Contains(c.files, n) {
					t.Fatalf("%s deleted %s, referenced by retained checkpoint %d", why, n, c.id)
				}
			}
			for _, c := range pending {
				if slices.Contains(c.files, n) {
					t.Fatalf("%s deleted %s, referenced by in-flight checkpoint %d", why, n, c.id)
				}
			}
			delete(area, n)
		}
	}
	listing := func() []string {
		var l []string
		for n := range area {
			l = append(l, n)
		}
		return l
	}
	// dirty: a checkpoint failed since the last sweep for orphans, which
	// waits until nothing is in flight (as the JobManager does).
	dirty := false
	sweep := func(why string) {
		if dirty && len(pending) == 0 {
			del(reg.Orphans(listing()), why)
			dirty = false
		}
	}
	for step := 0; step < 300; step++ {
		switch op := rng.IntN(10); {
		case op < 4 && len(pending) < 2: // trigger: compact some files away, flush new ones
			for i := len(live) - 1; i >= 0; i-- {
				if rng.IntN(4) == 0 {
					live = slices.Delete(live, i, i+1)
				}
			}
			for range 1 + rng.IntN(3) {
				fileSeq++
				live = append(live, fmt.Sprintf("%06d.sst", fileSeq))
			}
			c := chk{id: next}
			next++
			for _, local := range live {
				name := checkpoint.SharedName("s", local)
				if !confirmed[name] {
					area[name] = true // uploaded now
				}
				c.files = append(c.files, name)
			}
			pending[c.id] = c
		case op < 7 && len(pending) > 0: // complete the oldest in flight
			id := minKey(pending)
			c := pending[id]
			delete(pending, id)
			// A checkpoint older than the newest completed one is
			// subsumed: the coordinator aborts it (handled below).
			if len(done) > 0 && done[len(done)-1].id > id {
				dirty = true
				sweep("orphans after subsumed")
				continue
			}
			reg.Register(id, c.files)
			done = append(done, c)
			for _, n := range c.files {
				confirmed[n] = true
			}
			for len(done) > retained {
				old := done[0]
				done = done[1:]
				del(reg.Release(old.id), "release")
			}
			sweep("orphans after completion")
		case op < 8 && len(pending) > 0: // abort the newest in flight
			id := maxKey(pending)
			delete(pending, id)
			dirty = true
			sweep("orphans after abort")
		case op < 9: // crash: rebuild from the retained checkpoints' metadata
			pending = map[checkpoint.ID]chk{}
			reg = New()
			for _, c := range done {
				reg.Register(c.id, c.files)
			}
			del(reg.Orphans(listing()), "orphans at start-up")
			// The restored store has the newest checkpoint's files, and
			// they are confirmed.
			confirmed = map[string]bool{}
			live = nil
			if len(done) > 0 {
				last := done[len(done)-1]
				for _, n := range last.files {
					confirmed[n] = true
					live = append(live, n[len("s-"):])
				}
			}
		}
		// Invariants.
		want := map[string]bool{}
		for _, c := range done {
			for _, n := range c.files {
				want[n] = true
			}
		}
		for n := range want {
			if !area[n] {
				t.Fatalf("step %d: %s, referenced by a retained checkpoint, is gone", step, n)
			}
		}
		if len(pending) == 0 {
			if got, w := sortedKeys(area), sortedKeys(want); !slices.Equal(got, w) {
				t.Fatalf("step %d: shared area holds %v, retained checkpoints reference %v", step, got, w)
			}
		}
		if got, w := reg.Files(), sortedKeys(want); !slices.Equal(got, w) {
			t.Fatalf("step %d: registry knows %v, retained checkpoints reference %v", step, got, w)
		}
	}
}

func minKey(m map[checkpoint.ID]chk) checkpoint.ID {
	return slices.Min(keys(m))
}

func maxKey(m map[checkpoint.ID]chk) checkpoint.ID {
	return slices.Max(keys(m))
}

func keys(m map[checkpoint.ID]chk) []checkpoint.ID {
	var out []checkpoint.ID
	for k := range m {
		out = append(out, k)
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func TestReleaseKeepsSharedFile(t *testing.T) {
	r := New()
	r.Register(1, []string{"a", "b"})
	r.Register(2, []string{"b", "c"})
	if got := r.Release(1); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("release 1 freed %v, want [a]", got)
	}
	if got := r.Release(1); got != nil {
		t.Fatalf("second release freed %v", got)
	}
	if got := r.Release(2); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("release 2 freed %v, want [b c]", got)
	}
}
