package file_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/twophase"
)

// TestSinkWithTracker runs the sink the way the engine's two-phase-commit
// operator will: bookkeeping in twophase.Tracker, states encoded into
// checkpoints, lost notifications and crashes, a restore from the latest
// completed checkpoint. The committed output must be exactly the records
// before the barrier of the last completed checkpoint.
func TestSinkWithTracker(t *testing.T) {
	codec := twophase.MarshalerCodec[file.Txn, *file.Txn]{}
	for seed := uint64(1); seed <= 6; seed++ {
		rng := rand.New(rand.NewPCG(seed, 5))
		dir := t.TempDir()
		var (
			sink     *file.Sink
			tr       *twophase.Tracker[file.Txn]
			written  []string // records since the restored checkpoint
			covered  []string // records covered by the latest completed checkpoint
			inflight = map[checkpoint.ID][]string{}
			states   = map[checkpoint.ID][]byte{}
			latest   []byte
			nextID   checkpoint.ID
			record   int
		)
		start := func() {
			t.Helper()
			tr = twophase.NewTracker[file.Txn]()
			var restored twophase.State[file.Txn]
			if latest != nil {
				var err error
				if restored, err = twophase.DecodeState(latest, codec); err != nil {
					t.Fatal(err)
				}
			}
			commit, abort := tr.Restore(restored)
			var err error
			if sink, err = file.NewSink(dir, "snk", 0); err != nil {
				t.Fatal(err)
			}
			if err := sink.Open(append(slices.Clone(commit), abort...)); err != nil {
				t.Fatal(err)
			}
			for _, txn := range commit {
				if err := sink.Commit(txn); err != nil {
					t.Fatalf("seed %d: restore commit: %v", seed, err)
				}
			}
			for _, txn := range abort {
				if err := sink.Abort(txn); err != nil {
					t.Fatalf("seed %d: restore abort: %v", seed, err)
				}
			}
			txn, err := sink.Begin()
			if err != nil {
				t.Fatal(err)
			}
			tr.Begin(txn)
			written = slices.Clone(covered)
			clear(inflight)
			clear(states)
		}
		start()
		for range 150 {
			switch r := rng.IntN(20); {
			case r < 10:
				cur, _ := tr.Current()
				var batch [][]byte
				for range 1 + rng.IntN(3) {
					rec := fmt.Sprintf("s%d-r%d", seed, record)
					record++
					batch = append(batch, []byte(rec))
					written = append(written, rec)
				}
				if err := sink.Write(cur, batch); err != nil {
					t.Fatal(err)
				}
			case r < 14: // barrier
				nextID++
				txn, err := tr.PreCommit(nextID)
				if err != nil {
					t.Fatal(err)
				}
				if err := sink.PreCommit(txn); err != nil {
					t.Fatal(err)
				}
				next, err := sink.Begin()
				if err != nil {
					t.Fatal(err)
				}
				tr.Begin(next)
				if states[nextID], err = twophase.EncodeState(tr.State(), codec); err != nil {
					t.Fatal(err)
				}
				inflight[nextID] = slices.Clone(written)
			case r < 18: // the newest in-flight checkpoint completes
				if len(inflight) == 0 {
					continue
				}
				id := slices.Max(slices.Collect(mapKeys(inflight)))
				latest, covered = states[id], inflight[id]
				clear(inflight)
				if rng.IntN(3) == 0 {
					continue // notification lost
				}
				for _, p := range tr.Complete(id) {
					if err := sink.Commit(p.Txn); err != nil {
						t.Fatal(err)
					}
				}
			default: // crash, sometimes after aborting the open transaction
				if rng.IntN(2) == 0 {
					for _, txn := range tr.Abort() {
						if err := sink.Abort(txn); err != nil {
							t.Fatal(err)
						}
					}
				}
				sink.Close()
				start()
			}
		}
		sink.Close()
		start() // the final restore commits what the latest checkpoint holds
		sink.Close()
		got, err := file.ReadCommitted(dir)
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(covered)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d: committed %d records, want %d", seed, len(got), len(want))
		}
	}
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
