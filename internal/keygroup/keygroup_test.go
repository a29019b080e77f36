package keygroup

import (
	"testing"
)

func TestRangesPartitionAndAgreeWithOperatorIndex(t *testing.T) {
	for _, maxP := range []int{1, 7, 128, 1000} {
		for p := 1; p <= maxP && p <= 40; p++ {
			next := 0
			for i := 0; i < p; i++ {
				r := RangeFor(maxP, p, i)
				if r.Start != next {
					t.Fatalf("maxP=%d p=%d subtask %d starts at %d, want %d", maxP, p, i, r.Start, next)
				}
				for kg := r.Start; kg < r.End; kg++ {
					if got := OperatorIndex(kg, maxP, p); got != i {
						t.Fatalf("maxP=%d p=%d kg=%d: OperatorIndex=%d, range says %d", maxP, p, kg, got, i)
					}
				}
				next = r.End
			}
			if next != maxP {
				t.Fatalf("maxP=%d p=%d: ranges end at %d", maxP, p, next)
			}
		}
	}
}

// The hash is part of the checkpoint format: a change would move keys to
// other key groups and break every restore. These values pin it.
func TestHashIsStable(t *testing.T) {
	hi, err := Hasher[int]()
	if err != nil {
		t.Fatal(err)
	}
	hs, err := Hasher[string]()
	if err != nil {
		t.Fatal(err)
	}
	got := []int{Of(hi(0), 128), Of(hi(1), 128), Of(hi(999), 128), Of(hs("alice"), 128), Of(hs(""), 128)}
	want := []int{Of(Uint64(0), 128), Of(Uint64(1), 128), Of(Uint64(999), 128), Of(String("alice"), 128), Of(String(""), 128)}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("key %d: group %d, want %d", i, got[i], want[i])
		}
	}
	pinned := []uint32{Uint64(0), Uint64(1), Uint64(999), String("alice")}
	wantPinned := []uint32{0x0, 0x6dacf4f1, 0x54ffd9ab, 0x872213e7}
	for i := range pinned {
		if pinned[i] != wantPinned[i] {
			t.Fatalf("hash %d = %#x, want %#x: the key hash changed, which breaks restoring existing checkpoints", i, pinned[i], wantPinned[i])
		}
	}
	if Of(Uint64(999), 128) != 35 || Of(String("alice"), 128) != 30 {
		t.Fatal("key group assignment changed")
	}
}

type named int32

func TestHasherNamedTypesAndUnsupported(t *testing.T) {
	h, err := Hasher[named]()
	if err != nil {
		t.Fatal(err)
	}
	if h(5) != Uint64(5) {
		t.Fatal("named int32 must hash like its value")
	}
	if _, err := Hasher[struct{ A, B int }](); err == nil {
		t.Fatal("struct key without Hashable must be rejected")
	}
}

func TestKeyGroupsSpread(t *testing.T) {
	h, _ := Hasher[int]()
	counts := make([]int, 128)
	for k := 0; k < 128000; k++ {
		counts[Of(h(k), 128)]++
	}
	for kg, c := range counts {
		if c < 800 || c > 1200 {
			t.Fatalf("key group %d holds %d of 128000 sequential keys; hash spreads badly", kg, c)
		}
	}
}
