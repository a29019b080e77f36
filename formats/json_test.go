package formats

import (
	stdjson "encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

type inner struct {
	Note string `json:"note,omitempty"`
}

type Embedded struct {
	Region string `json:"region"`
}

// tagged exercises encoding/json's tags and kinds.
type tagged struct {
	Embedded
	ID       int64             `json:"id"`
	Name     string            `json:"name,omitempty"`
	Secret   string            `json:"-"`
	Count    int               `json:"count,string"`
	Price    float64           `json:"price"`
	At       time.Time         `json:"at"`
	Raw      []byte            `json:"raw"`
	Tags     []string          `json:"tags"`
	Attrs    map[string]string `json:"attrs"`
	Ptr      *inner            `json:"ptr"`
	Nested   inner             `json:"nested"`
	Untagged bool
}

func taggedValues() []tagged {
	at := time.Date(2026, 12, 6, 13, 35, 0, 123456789, time.UTC)
	return []tagged{
		{},
		{Embedded: Embedded{"eu"}, ID: -7, Name: "ünïcode \"quoted\" <html>", Secret: "kept out", Count: 42, Price: 0.1,
			At: at, Raw: []byte{0, 1, 255}, Tags: []string{"a", ""}, Attrs: map[string]string{"b": "2", "a": "1"},
			Ptr: &inner{"p"}, Nested: inner{"n"}, Untagged: true},
		{ID: 1 << 53, Tags: []string{}, Attrs: map[string]string{}},
	}
}

// TestJSONMatchesEncodingJSON: the format writes the bytes encoding/json
// writes for the same tags, and reads encoding/json's output into the
// value encoding/json reads: records move between weir and Go programs
// that use the standard library without surprises.
func TestJSONMatchesEncodingJSON(t *testing.T) {
	f := JSON[tagged]()
	for i, v := range taggedValues() {
		want, err := stdjson.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.Encode(v)
		if err != nil {
			t.Fatalf("value %d: %v", i, err)
		}
		if string(got) != string(want) {
			t.Errorf("value %d: encoded\n%s\nencoding/json:\n%s", i, got, want)
		}
		var std tagged
		if err := stdjson.Unmarshal(want, &std); err != nil {
			t.Fatal(err)
		}
		back, err := f.Decode(want)
		if err != nil {
			t.Fatalf("value %d: decode: %v", i, err)
		}
		if !reflect.DeepEqual(back, std) {
			t.Errorf("value %d: decoded %+v, encoding/json %+v", i, back, std)
		}
	}
}

func TestJSONDecodeErrorsNameTypeOffsetAndInput(t *testing.T) {
	f := JSON[tagged]()
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`{"id": 12, "name": }`, []string{"formats.tagged", "at byte", `the record starts "{\"id\": 12`}},
		{`{"id": "twelve"}`, []string{"formats.tagged", "at byte", "id"}},
		{strings.Repeat("x", 100), []string{"formats.tagged", "(100 bytes)"}},
	} {
		_, err := f.Decode([]byte(tc.in))
		if err == nil {
			t.Fatalf("Decode(%q) took it", tc.in)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Decode(%q) = %q, want it to contain %q", tc.in, err, w)
			}
		}
	}
}

func TestJSONEncodeError(t *testing.T) {
	type bad struct{ C chan int }
	_, err := JSON[bad]().Encode(bad{C: make(chan int)})
	if err == nil || !strings.Contains(err.Error(), "encode formats.bad as JSON") {
		t.Fatalf("Encode = %v, want the encode error naming the type", err)
	}
}

func BenchmarkJSON(b *testing.B) {
	f := JSON[tagged]()
	v := taggedValues()[1]
	data, _ := stdjson.Marshal(v)
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := f.Decode(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode-encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			var x tagged
			if err := stdjson.Unmarshal(data, &x); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := f.Encode(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode-encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := stdjson.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
