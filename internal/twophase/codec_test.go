package twophase

import (
	"errors"
	"reflect"
	"testing"
)

func TestStateRoundTrip(t *testing.T) {
	for _, s := range []State[string]{
		{},
		{Current: "", HasCurrent: true},
		{Pending: []Pending[string]{{ID: 1, Txn: "a"}}, Current: "b", HasCurrent: true},
		{Pending: []Pending[string]{{ID: -3, Txn: ""}, {ID: 4, Txn: "x"}, {ID: 1 << 40, Txn: "long handle"}}},
	} {
		b, err := EncodeState(s, stringCodec{})
		if err != nil {
			t.Fatalf("encode %+v: %v", s, err)
		}
		got, err := DecodeState(b, stringCodec{})
		if err != nil {
			t.Fatalf("decode %+v: %v", s, err)
		}
		if !reflect.DeepEqual(got, s) {
			t.Fatalf("round trip = %+v, want %+v", got, s)
		}
	}
}

func TestEncodeStateErrors(t *testing.T) {
	_, err := EncodeState(State[string]{Pending: []Pending[string]{{ID: 2, Txn: "a"}, {ID: 2, Txn: "b"}}}, stringCodec{})
	if want := "encode two-phase-commit state: pending checkpoint ids out of order (2 after 2)"; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	_, err = EncodeState(State[string]{Current: "\xff", HasCurrent: true}, stringCodec{})
	if want := "encode two-phase-commit state: open transaction: invalid utf-8 handle"; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

func TestDecodeStateCorrupt(t *testing.T) {
	valid, err := EncodeState(State[string]{Pending: []Pending[string]{{ID: 1, Txn: "a"}, {ID: 2, Txn: "b"}}, Current: "c", HasCurrent: true}, stringCodec{})
	if err != nil {
		t.Fatal(err)
	}
	// Every strict prefix is truncated, and so corrupt.
	for n := range len(valid) {
		if _, err := DecodeState(valid[:n], stringCodec{}); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("prefix %d: err = %v, want ErrCorrupt", n, err)
		}
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"version", []byte{2, 0, 0}, "decode two-phase-commit state: version 2, want 1: corrupt two-phase-commit state"},
		{"trailing", append(append([]byte(nil), valid...), 9), "decode two-phase-commit state: 1 trailing bytes: corrupt two-phase-commit state"},
		{"flag", []byte{1, 0, 7}, "decode two-phase-commit state: open-transaction flag 7: corrupt two-phase-commit state"},
		{"order", []byte{1, 2, 4, 0, 2, 0, 0}, "decode two-phase-commit state: pending checkpoint ids out of order (1 after 2): corrupt two-phase-commit state"},
		{"huge count", []byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f, 0}, "decode two-phase-commit state: 4294967295 pending transactions in 1 bytes: corrupt two-phase-commit state"},
		{"length", []byte{1, 1, 2, 9, 'a', 0}, "decode two-phase-commit state: length 9 exceeds 2 remaining bytes: truncated: corrupt two-phase-commit state"},
	} {
		_, err := DecodeState(tc.b, stringCodec{})
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	// A handle the codec refuses surfaces the codec's error.
	_, err = DecodeState([]byte{1, 0, 1, 1, 0xff}, stringCodec{})
	if want := "decode two-phase-commit state: open transaction: invalid utf-8 handle"; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

type binTxn struct{ n byte }

func (b binTxn) MarshalBinary() ([]byte, error) { return []byte{b.n}, nil }
func (b *binTxn) UnmarshalBinary(p []byte) error {
	if len(p) != 1 {
		return errors.New("want one byte")
	}
	b.n = p[0]
	return nil
}

func TestMarshalerCodec(t *testing.T) {
	c := MarshalerCodec[binTxn, *binTxn]{}
	s := State[binTxn]{Pending: []Pending[binTxn]{{ID: 5, Txn: binTxn{7}}}, Current: binTxn{8}, HasCurrent: true}
	b, err := EncodeState(s, c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeState(b, c)
	if err != nil || !reflect.DeepEqual(got, s) {
		t.Fatalf("round trip = %+v, %v; want %+v", got, err, s)
	}
}

func FuzzDecodeState(f *testing.F) {
	for _, s := range []State[string]{
		{},
		{Pending: []Pending[string]{{ID: 1, Txn: "a"}, {ID: 9, Txn: "bb"}}, Current: "c", HasCurrent: true},
	} {
		b, err := EncodeState(s, stringCodec{})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeState(b, stringCodec{})
		if err != nil {
			return
		}
		// Whatever decodes must survive an encode/decode round trip
		// (varints need not be minimal, so compare states, not bytes).
		again, err := EncodeState(s, stringCodec{})
		if err != nil {
			t.Fatalf("re-encode %+v: %v", s, err)
		}
		s2, err := DecodeState(again, stringCodec{})
		if err != nil || !reflect.DeepEqual(s2, s) {
			t.Fatalf("round trip = %+v, %v; want %+v", s2, err, s)
		}
	})
}
