package state

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/keygroup"
)

func sampleSnapshot(t testing.TB) RestoreSource {
	f := newFixture(t, fullRange)
	f.register(t)
	populate(applier{f, newModel()}, 40)
	return snapshotBytes(t, f.b)
}

// tryRestore restores src into a fresh fixture, registering the states
// before (pre) or after the restore, and returns the first error.
func tryRestore(t testing.TB, src RestoreSource, pre bool) error {
	f := newFixture(t, fullRange)
	if pre {
		f.register(t)
	}
	if err := f.b.Restore(t.Context(), []RestoreSource{src}); err != nil {
		return err
	}
	if !pre {
		for _, reg := range []func() error{
			func() error { _, err := RegisterValue(f.b, "val", f.codes.i64); return err },
			func() error { _, err := RegisterList(f.b, "list", f.codes.str); return err },
			func() error { _, err := RegisterMap(f.b, "map", f.codes.str, f.codes.ival); return err },
			func() error {
				_, err := RegisterReducing(f.b, "sum", func(a, b int64) int64 { return a + b }, f.codes.i64)
				return err
			},
		} {
			if err := reg(); err != nil {
				return err
			}
		}
	}
	// Whatever was restored must snapshot again without trouble.
	s := f.b.Snapshot()
	defer s.Release()
	_, err := s.WriteBlocks(&bytesBuffer{})
	return err
}

func wantCorrupt(t testing.TB, err error, what string) {
	t.Helper()
	if !errors.Is(err, codec.ErrCorrupt) {
		t.Fatalf("%s: err = %v, want one wrapping codec.ErrCorrupt", what, err)
	}
}

func TestTruncatedBlocksAreCorrupt(t *testing.T) {
	src := sampleSnapshot(t)
	for _, kgo := range src.KeyGroups[:4] {
		for cut := int64(0); cut < kgo.Length; cut++ {
			s := RestoreSource{Data: src.Data, KeyGroups: []checkpoint.KeyGroupOffset{{KeyGroup: kgo.KeyGroup, Offset: kgo.Offset, Length: cut}}}
			for _, pre := range []bool{true, false} {
				wantCorrupt(t, tryRestore(t, s, pre), "truncated block")
			}
		}
	}
}

func TestFlippedBytesNeverPanic(t *testing.T) {
	src := sampleSnapshot(t)
	kgo := src.KeyGroups[1]
	block := src.Data[kgo.Offset : kgo.Offset+kgo.Length]
	for i := range block {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			data := append([]byte(nil), block...)
			data[i] ^= x
			s := RestoreSource{Data: data, KeyGroups: []checkpoint.KeyGroupOffset{{KeyGroup: kgo.KeyGroup, Length: int64(len(data))}}}
			for _, pre := range []bool{true, false} {
				err := tryRestore(t, s, pre)
				if err != nil && !errors.Is(err, codec.ErrCorrupt) && !errors.Is(err, ErrStateMismatch) {
					t.Fatalf("byte %d ^ %#x: err = %v", i, x, err)
				}
			}
		}
	}
}

func TestCorruptErrorsNameStateAndKeyGroup(t *testing.T) {
	// A block for key group 3 with a value section whose value is cut off.
	blk := []byte{blockVersion, 3, 1}
	blk = appendString(blk, "val")
	blk = append(blk, byte(KindValue))
	payload := []byte{1}                      // one entry
	payload = binary.AppendVarint(payload, 7) // key 7 (an int)
	payload = append(payload, 0x80)           // a varint that never ends
	blk = binary.AppendUvarint(blk, uint64(len(payload)))
	blk = append(blk, payload...)
	src := RestoreSource{Data: blk, KeyGroups: []checkpoint.KeyGroupOffset{{KeyGroup: 3, Length: int64(len(blk))}}}
	for _, pre := range []bool{true, false} {
		err := tryRestore(t, src, pre)
		wantCorrupt(t, err, "bad value")
		if !strings.Contains(err.Error(), `state "val" key group 3`) {
			t.Fatalf("error %q does not name the state and key group", err)
		}
	}

	cases := map[string]RestoreSource{
		"offset past end":   {Data: blk, KeyGroups: []checkpoint.KeyGroupOffset{{KeyGroup: 3, Offset: 2, Length: int64(len(blk))}}},
		"negative length":   {Data: blk, KeyGroups: []checkpoint.KeyGroupOffset{{KeyGroup: 3, Length: -1}}},
		"other key group":   {Data: blk, KeyGroups: []checkpoint.KeyGroupOffset{{KeyGroup: 4, Length: int64(len(blk))}}},
		"unknown version":   {Data: append([]byte{9}, blk[1:]...), KeyGroups: []checkpoint.KeyGroupOffset{{KeyGroup: 3, Length: int64(len(blk))}}},
		"trailing garbage":  {Data: append(append([]byte{}, sampleBlock(t)...), 0), KeyGroups: []checkpoint.KeyGroupOffset{{KeyGroup: 0, Length: int64(len(sampleBlock(t)) + 1)}}},
		"overflowing range": {Data: blk, KeyGroups: []checkpoint.KeyGroupOffset{{KeyGroup: 3, Offset: 1 << 62, Length: 1 << 62}}},
	}
	for name, src := range cases {
		wantCorrupt(t, tryRestore(t, src, true), name)
	}
}

func sampleBlock(t testing.TB) []byte {
	src := sampleSnapshot(t)
	k := src.KeyGroups[0]
	return src.Data[k.Offset : k.Offset+k.Length]
}

func TestRestoreSkipsForeignKeyGroups(t *testing.T) {
	// A block outside the range is not even read: garbage there is fine.
	f := newFixture(t, keygroup.RangeFor(testMaxP, 2, 1))
	src := RestoreSource{Data: []byte{0xde, 0xad}, KeyGroups: []checkpoint.KeyGroupOffset{{KeyGroup: 0, Length: 2}}}
	if err := f.b.Restore(t.Context(), []RestoreSource{src}); err != nil {
		t.Fatalf("foreign key group was read: %v", err)
	}
}

func FuzzRestore(f *testing.F) {
	src := sampleSnapshot(f)
	for _, k := range src.KeyGroups[:6] {
		f.Add(src.Data[k.Offset:k.Offset+k.Length], uint8(k.KeyGroup), false)
		f.Add(src.Data[k.Offset:k.Offset+k.Length], uint8(k.KeyGroup), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, kg uint8, pre bool) {
		s := RestoreSource{Data: data, KeyGroups: []checkpoint.KeyGroupOffset{{KeyGroup: int(kg) % testMaxP, Length: int64(len(data))}}}
		err := tryRestore(t, s, pre)
		if err != nil && !errors.Is(err, codec.ErrCorrupt) && !errors.Is(err, ErrStateMismatch) {
			t.Fatalf("err = %v, want ErrCorrupt or ErrStateMismatch", err)
		}
	})
}
