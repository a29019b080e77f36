package demo

import "testing"

func TestExcess(t *testing.T) {
	want := []string{"a", "b", "b", "c"}
	for _, c := range []struct {
		got []string
		ok  bool
	}{
		{nil, true},
		{[]string{"b", "a", "b"}, true},
		{want, true},
		{[]string{"a", "a"}, false},          // a duplicate
		{[]string{"b", "b", "b"}, false},     // more than wanted
		{[]string{"a", "d"}, false},          // a line no run makes
		{append(want, "c"), false},           // all, and one twice
		{[]string{"c", "b", "b", "a"}, true}, // order does not matter
	} {
		if d := Excess(want, c.got); (d == "") != c.ok {
			t.Errorf("Excess(%v, %v) = %q, want ok=%v", want, c.got, d, c.ok)
		}
	}
}
