package keygroup

import (
	"testing"
)

type pairKey struct {
	A, B int64
}

func (k pairKey) StableHash() uint32 { return Uint64(uint64(k.A)*31 + uint64(k.B)) }

type namedKey struct {
	Name string
	N    int64
}

func (k namedKey) StableHash() uint32 { return String(k.Name) ^ Uint64(uint64(k.N)) }

type wordKey struct{ N int64 } // one word: Go stores it in an interface directly

func (k wordKey) StableHash() uint32 { return Uint64(uint64(k.N)) }

// TestHashableHasher: the hasher allocates nothing and agrees with the method called
// directly, for struct keys of several sizes.
func TestHashableHasher(t *testing.T) {
	hp, err := Hasher[pairKey]()
	if err != nil {
		t.Fatal(err)
	}
	hn, _ := Hasher[namedKey]()
	hw, _ := Hasher[wordKey]()
	for i := range int64(1000) {
		p, n, w := pairKey{i, -i * 7}, namedKey{string(rune('a' + i%26)), i}, wordKey{i}
		if hp(p) != p.StableHash() || hn(n) != n.StableHash() || hw(w) != w.StableHash() {
			t.Fatalf("key %d: hasher disagrees with StableHash", i)
		}
	}
	k := pairKey{1, 2}
	if a := testing.AllocsPerRun(1000, func() { k.A++; _ = hp(k) }); a != 0 {
		t.Errorf("hashing a struct key allocates %v times", a)
	}
	nk := namedKey{"auction", 3}
	if a := testing.AllocsPerRun(1000, func() { nk.N++; _ = hn(nk) }); a != 0 {
		t.Errorf("hashing a string+int key allocates %v times", a)
	}
}
