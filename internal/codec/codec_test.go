package codec

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

type UserID int64

type Label string

type Inner struct {
	Tags  []Label
	Score float32
}

type Order struct {
	ID       UserID
	Name     string
	Paid     bool
	Amounts  []int32
	Meta     map[string]uint16
	Inner    Inner
	Next     *Order
	At       time.Time
	Addr     netip.Addr // BinaryMarshaler with pointer-receiver UnmarshalBinary
	Raw      []byte
	Fixed    [3]int8
	Nested   map[int][]string
	Embedded // an exported embedded struct is encoded like a field
}

type Embedded struct{ E uint }

type hidden struct {
	Visible int
	secret  int
}

func roundTrip[T any](t *testing.T, v T) {
	t.Helper()
	c, err := For[T]()
	if err != nil {
		t.Fatalf("For[%T]: %v", v, err)
	}
	prefix := []byte("prefix")
	buf := c.Append(append([]byte{}, prefix...), v)
	if !bytes.HasPrefix(buf, prefix) {
		t.Fatalf("%T: Append clobbered dst", v)
	}
	got, n, err := c.Decode(append(buf[len(prefix):], "trailer"...))
	if err != nil {
		t.Fatalf("%T: decode %x: %v", v, buf, err)
	}
	if n != len(buf)-len(prefix) {
		t.Fatalf("%T: consumed %d bytes, encoding has %d", v, n, len(buf)-len(prefix))
	}
	if !reflect.DeepEqual(got, v) {
		t.Fatalf("%T: round trip got %#v, want %#v", v, got, v)
	}
	// Every strict prefix of a valid encoding is truncated input.
	for i := range n {
		if _, _, err := c.Decode(buf[len(prefix) : len(prefix)+i]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%T: decode of %d-byte prefix: err %v, want ErrCorrupt", v, i, err)
		}
	}
}

func TestRoundTripPrimitives(t *testing.T) {
	roundTrip(t, true)
	roundTrip(t, false)
	for _, v := range []int64{0, 1, -1, 63, -64, 64, math.MaxInt64, math.MinInt64} {
		roundTrip(t, v)
		roundTrip(t, int(v))
		roundTrip(t, UserID(v))
	}
	roundTrip(t, int8(-128))
	roundTrip(t, int16(math.MaxInt16))
	roundTrip(t, int32(math.MinInt32))
	roundTrip(t, uint(math.MaxUint))
	roundTrip(t, uint8(255))
	roundTrip(t, uint16(65535))
	roundTrip(t, uint32(math.MaxUint32))
	roundTrip(t, uint64(math.MaxUint64))
	roundTrip(t, float32(-1.5))
	roundTrip(t, math.Inf(-1))
	roundTrip(t, 3.25)
	roundTrip(t, "")
	roundTrip(t, "héllo")
	roundTrip(t, Label("x"))
	roundTrip(t, []byte{})
	roundTrip(t, []byte(nil))
	roundTrip(t, []byte{0, 1, 255})
	roundTrip(t, time.Date(2024, 2, 29, 13, 14, 15, 16, time.UTC))
	roundTrip(t, time.Time{})
	roundTrip(t, netip.MustParseAddr("10.1.2.3"))
}

func TestRoundTripComposite(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	o := Order{
		ID: 7, Name: "a", Paid: true, Amounts: []int32{1, -2, 3},
		Meta:     map[string]uint16{"x": 1, "y": 2, "": 3},
		Inner:    Inner{Tags: []Label{"t1", ""}, Score: 0.5},
		Next:     &Order{ID: 8, Amounts: []int32{}, Meta: map[string]uint16{}},
		At:       at,
		Addr:     netip.MustParseAddr("::1"),
		Raw:      []byte("raw"),
		Fixed:    [3]int8{-1, 0, 1},
		Nested:   map[int][]string{1: {"a"}, -5: nil, 3: {}},
		Embedded: Embedded{E: 9},
	}
	roundTrip(t, o)
	roundTrip(t, Order{})
	roundTrip(t, &o)
	roundTrip(t, (*Order)(nil))
	roundTrip(t, []*Order{nil, &o})
	roundTrip(t, [0]int{})
	roundTrip(t, []struct{}{{}, {}, {}})
	roundTrip(t, map[UserID]Inner{1: {}, 2: {Tags: []Label{"z"}}})
	roundTrip(t, [2][]float64{{1}, nil})
}

func TestTimeKeepsInstantAndOffset(t *testing.T) {
	c, _ := For[time.Time]()
	in := time.Date(2024, 2, 29, 13, 14, 15, 16, time.FixedZone("CET", 3600))
	got, _, err := c.Decode(c.Append(nil, in))
	if err != nil {
		t.Fatal(err)
	}
	_, off := got.Zone()
	if !got.Equal(in) || off != 3600 {
		t.Fatalf("got %v (offset %d), want %v (offset 3600)", got, off, in)
	}
}

func TestMapEncodingIsDeterministic(t *testing.T) {
	c, err := For[map[string]int]()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int{}
	for i := range 100 {
		m[fmt.Sprint("k", i)] = i
	}
	first := c.Append(nil, m)
	for range 20 {
		if got := c.Append(nil, m); !bytes.Equal(got, first) {
			t.Fatalf("map encodings differ:\n%x\n%x", got, first)
		}
	}
}

func TestUnsupportedTypes(t *testing.T) {
	check := func(err error, wantInMsg string) {
		t.Helper()
		if !errors.Is(err, ErrUnsupported) {
			t.Fatalf("err = %v, want ErrUnsupported", err)
		}
		if !strings.Contains(err.Error(), wantInMsg) || !strings.Contains(err.Error(), "BinaryMarshaler") {
			t.Fatalf("err %q does not name %q and the fix", err, wantInMsg)
		}
	}
	_, err := For[chan int]()
	check(err, "chan int")
	_, err = For[func()]()
	check(err, "func()")
	_, err = For[any]()
	check(err, "interface {}")
	_, err = For[hidden]()
	check(err, "unexported field secret")
	_, err = For[map[string][]chan int]()
	check(err, "chan int")
	_, err = For[complex128]()
	check(err, "complex128")
}

type Node struct {
	V    int
	Next *Node
}

func TestRecursiveType(t *testing.T) {
	roundTrip(t, &Node{V: 1, Next: &Node{V: 2}})
	c, err := For[*Node]()
	if err != nil {
		t.Fatal(err)
	}
	cyc := &Node{V: 1}
	cyc.Next = cyc
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), "pointer cycle") {
			t.Fatalf("encoding a cycle: recovered %v, want a panic naming the pointer cycle", r)
		}
	}()
	c.Append(nil, cyc)
}

func TestDeepInputIsCorrupt(t *testing.T) {
	c, err := For[*Node]()
	if err != nil {
		t.Fatal(err)
	}
	// 1 (present) 0 (V=0), repeated past maxDepth, never terminated.
	deep := bytes.Repeat([]byte{1, 0}, maxDepth+5)
	if _, _, err := c.Decode(deep); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err = %v, want ErrCorrupt", err)
	}
}

func TestCorruptInputs(t *testing.T) {
	cases := []struct {
		name string
		dec  func([]byte) error
		in   []byte
	}{
		{"bool 2", decodeWith[bool](), []byte{2}},
		{"int8 overflow", decodeWith[int8](), []byte{0x80, 0x02}}, // zigzag of 128
		{"uint8 overflow", decodeWith[uint8](), []byte{0x80, 0x02}},
		{"varint overflow", decodeWith[int64](), bytes.Repeat([]byte{0xff}, 11)},
		{"string length huge", decodeWith[string](), []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 'a'}},
		{"bytes length huge", decodeWith[[]byte](), []byte{0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"slice count huge", decodeWith[[]int64](), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}},
		{"map duplicate key", decodeWith[map[int8]bool](), []byte{3, 2, 1, 2, 1}},
		{"pointer flag", decodeWith[*int](), []byte{7}},
		{"time garbage", decodeWith[time.Time](), []byte{3, 9, 9, 9}},
		{"marshaler garbage", decodeWith[netip.Addr](), []byte{3, 1, 2, 3}},
		{"empty struct input", decodeWith[Inner](), nil},
		{"float64 short", decodeWith[float64](), []byte{1, 2, 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.dec(tc.in); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode %x: err = %v, want ErrCorrupt", tc.in, err)
			}
		})
	}
}

func decodeWith[T any]() func([]byte) error {
	return func(b []byte) error {
		c, err := For[T]()
		if err != nil {
			return err
		}
		_, _, err = c.Decode(b)
		return err
	}
}

func TestInt8OutOfRange(t *testing.T) {
	c64, _ := For[int64]()
	c8, _ := For[int8]()
	if _, _, err := c8.Decode(c64.Append(nil, 128)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("int8 from 128: err = %v, want ErrCorrupt", err)
	}
}

func TestPrimitiveCodecsDoNotAllocate(t *testing.T) {
	ci, _ := For[UserID]()
	cs, _ := For[string]()
	ct, _ := For[time.Time]()
	buf := make([]byte, 0, 64)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	allocs := testing.AllocsPerRun(100, func() {
		b := ci.Append(buf[:0], 12345)
		if _, _, err := ci.Decode(b); err != nil {
			t.Fatal(err)
		}
		b = cs.Append(b, "abc")
		b = ct.Append(b, now)
		if _, _, err := ct.Decode(b[len(b)-16:]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("primitive codecs allocate %v times per run, want 0", allocs)
	}
}
