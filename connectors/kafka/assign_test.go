package kafka

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// A union restore gives every partition of the topic to exactly one
// subtask, q mod p, at any parallelism: the checkpoint's partitions with
// their offsets, the ones it lacks (created since) from the earliest
// offset.
func TestPlanStartUnion(t *testing.T) {
	// The checkpoint was taken at some parallelism when the topic had 5
	// partitions; it now has 7.
	union := []partitionOffset{{0, 10}, {2, 12}, {4, 14}, {1, 11}, {3, 13}}
	for p := 1; p <= 8; p++ {
		restored := map[int32]int64{}
		var earliest []int32
		for s := range p {
			sp, err := planStart(true, union, nil, 7, s, p)
			if err != nil {
				t.Fatal(err)
			}
			if len(sp.fresh) != 0 {
				t.Errorf("p=%d s=%d: fresh %v after a restore", p, s, sp.fresh)
			}
			for q, next := range sp.restored {
				if !owns(q, s, p) {
					t.Errorf("p=%d s=%d restores partition %d, owned by subtask %d", p, s, q, int(q)%p)
				}
				if _, dup := restored[q]; dup {
					t.Errorf("p=%d: partition %d restored twice", p, q)
				}
				restored[q] = next
			}
			for _, q := range sp.earliest {
				if !owns(q, s, p) {
					t.Errorf("p=%d s=%d starts partition %d, owned by subtask %d", p, s, q, int(q)%p)
				}
			}
			earliest = append(earliest, sp.earliest...)
		}
		slices.Sort(earliest)
		if want := map[int32]int64{0: 10, 1: 11, 2: 12, 3: 13, 4: 14}; !maps.Equal(restored, want) {
			t.Errorf("p=%d: restored %v, want %v", p, restored, want)
		}
		if !slices.Equal(earliest, []int32{5, 6}) {
			t.Errorf("p=%d: earliest %v, want [5 6]", p, earliest)
		}
	}
}

// A fresh start takes the owned partitions; an old-format (round-robin)
// restore exactly the handed ones, whatever their owner by the modulus.
func TestPlanStartFreshAndLegacy(t *testing.T) {
	sp, err := planStart(false, nil, nil, 5, 1, 2)
	if err != nil || !slices.Equal(sp.fresh, []int32{1, 3}) || len(sp.restored)+len(sp.earliest) != 0 {
		t.Errorf("fresh = %+v, %v; want fresh [1 3] only", sp, err)
	}
	sp, err = planStart(true, nil, []partitionOffset{{0, 5}, {3, 7}}, 5, 1, 2)
	if err != nil || !maps.Equal(sp.restored, map[int32]int64{0: 5, 3: 7}) || len(sp.fresh)+len(sp.earliest) != 0 {
		t.Errorf("legacy = %+v, %v; want restored {0:5 3:7} only", sp, err)
	}
	// A subtask handed nothing reads nothing: the others hold the
	// checkpoint's partitions.
	sp, err = planStart(true, nil, nil, 5, 4, 5)
	if err != nil || len(sp.restored)+len(sp.fresh)+len(sp.earliest) != 0 {
		t.Errorf("legacy, handed nothing = %+v, %v; want nothing", sp, err)
	}
}

// Checkpoints this source cannot have written fail the restore.
func TestPlanStartRejects(t *testing.T) {
	for _, c := range []struct {
		union, legacy []partitionOffset
		want          string
	}{
		{[]partitionOffset{{1, 0}, {1, 3}}, nil, "partition 1 twice"},
		{nil, []partitionOffset{{2, 0}, {2, 3}}, "partition 2 twice"},
		{[]partitionOffset{{9, 0}}, nil, "partition 9 of a topic that has 5"},
		{[]partitionOffset{{0, 0}}, []partitionOffset{{1, 0}}, "both the union and the round-robin format"},
	} {
		_, err := planStart(true, c.union, c.legacy, 5, 0, 1)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("planStart(%v, %v) = %v, want an error with %q", c.union, c.legacy, err, c.want)
		}
	}
}

func TestNewlyOwned(t *testing.T) {
	if got := newlyOwned(2, 7, 1, 3); !slices.Equal(got, []int32{4}) {
		t.Errorf("newlyOwned(2, 7, 1, 3) = %v, want [4]", got)
	}
	if got := newlyOwned(2, 7, 0, 3); !slices.Equal(got, []int32{3, 6}) {
		t.Errorf("newlyOwned(2, 7, 0, 3) = %v, want [3 6]", got)
	}
	if got := newlyOwned(5, 5, 0, 1); got != nil {
		t.Errorf("newlyOwned(5, 5, 0, 1) = %v, want none", got)
	}
}

// The log returns a completed checkpoint's offsets once, forgets older
// ones, and keeps a bounded number.
func TestSnapshotLog(t *testing.T) {
	l := snapshotLog{}
	for id := int64(1); id <= 12; id++ {
		l.add(id, map[int32]int64{0: id * 10})
	}
	if got := slices.Sorted(maps.Keys(l)); !slices.Equal(got, []int64{5, 6, 7, 8, 9, 10, 11, 12}) {
		t.Fatalf("kept %v, want the newest %d", got, maxSnapshotsKept)
	}
	if got := l.complete(3); got != nil {
		t.Errorf("complete(3) = %v, want nil (dropped)", got)
	}
	if got := l.complete(7); !reflect.DeepEqual(got, map[int32]int64{0: 70}) {
		t.Errorf("complete(7) = %v", got)
	}
	if got := fmt.Sprint(slices.Sorted(maps.Keys(l))); got != "[8 9 10 11 12]" {
		t.Errorf("after complete(7) kept %s, want [8 9 10 11 12]", got)
	}
	if got := l.complete(7); got != nil {
		t.Errorf("complete(7) again = %v, want nil", got)
	}
}
