package lsm

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestKeyLayout runs testdata/keys.txt: how store keys are built, parsed
// and ordered, and which keys fall into a key-group range or under a key's
// map prefix.
//
//	key kg=N sid=N k=HEX [uk=HEX]   the store key and its parse
//	sort                           input: one key spec per line; prints them in store order
//	groups start=N end=N           input: key specs; marks those inside the key-group range
//	entries kg=N sid=N k=HEX       input: key specs; marks those under the key's entry prefix
func TestKeyLayout(t *testing.T) {
	datadriven.RunTest(t, "testdata/keys.txt", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "key":
			k := specKey(t, argsOf(d))
			sk, err := parseKey(k)
			if err != nil {
				return "parse error: " + err.Error()
			}
			return fmt.Sprintf("%x\nkg=%d sid=%d key=%x ns=%x suffix=%x\n", k, sk.kg, sk.sid, sk.key, sk.ns, sk.suffix)
		case "sort":
			lines := inputLines(d)
			slices.SortStableFunc(lines, func(a, b string) int {
				return bytes.Compare(specKey(t, lineArgs(a)), specKey(t, lineArgs(b)))
			})
			return strings.Join(lines, "\n") + "\n"
		case "groups":
			var start, end int
			d.ScanArgs(t, "start", &start)
			d.ScanArgs(t, "end", &end)
			lo, hi := appendGroupPrefix(nil, start), appendGroupPrefix(nil, end)
			return mark(t, d, func(k []byte) bool { return bytes.Compare(k, lo) >= 0 && bytes.Compare(k, hi) < 0 })
		case "entries":
			lo := specKey(t, argsOf(d))
			hi := prefixEnd(lo)
			return mark(t, d, func(k []byte) bool { return bytes.Compare(k, lo) >= 0 && bytes.Compare(k, hi) < 0 })
		}
		t.Fatalf("unknown command %q", d.Cmd)
		return ""
	})
}

func mark(t *testing.T, d *datadriven.TestData, in func([]byte) bool) string {
	var out strings.Builder
	for _, l := range inputLines(d) {
		tag := "out"
		if in(specKey(t, lineArgs(l))) {
			tag = "in "
		}
		fmt.Fprintf(&out, "%s %s\n", tag, l)
	}
	return out.String()
}

func inputLines(d *datadriven.TestData) []string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

func argsOf(d *datadriven.TestData) map[string]string {
	m := map[string]string{}
	for _, a := range d.CmdArgs {
		if len(a.Vals) > 0 {
			m[a.Key] = a.Vals[0]
		} else {
			m[a.Key] = ""
		}
	}
	return m
}

func lineArgs(l string) map[string]string {
	m := map[string]string{}
	for _, f := range strings.Fields(l) {
		k, v, _ := strings.Cut(f, "=")
		m[k] = v
	}
	return m
}

// specKey builds the store key of kg=, sid=, k= and optional uk= (hex).
func specKey(t *testing.T, m map[string]string) []byte {
	t.Helper()
	var kg, sid int
	fmt.Sscan(m["kg"], &kg)
	fmt.Sscan(m["sid"], &sid)
	k, err := hex.DecodeString(m["k"])
	if err != nil {
		t.Fatal(err)
	}
	key := appendKey(nil, kg, uint16(sid), k, nil)
	if uk, ok := m["uk"]; ok {
		b, err := hex.DecodeString(uk)
		if err != nil {
			t.Fatal(err)
		}
		key = appendUserKey(key, b)
	}
	return key
}

func TestParseKeyRejectsMalformed(t *testing.T) {
	for _, k := range [][]byte{nil, {0, 1, 0}, {0, 1, 0, 2, 5, 'a'}, {0, 1, 0, 2, 1, 'a'}, {0, 1, 0, 2, 1, 'a', 3}} {
		if _, err := parseKey(k); err == nil {
			t.Errorf("parseKey(%x) accepted a malformed key", k)
		}
	}
	if _, err := userKey([]byte{2, 'a'}); err == nil {
		t.Error("userKey accepted a truncated user key")
	}
	if _, err := userKey([]byte{1, 'a', 'b'}); err == nil {
		t.Error("userKey accepted bytes after the user key")
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, c := range []struct{ in, want []byte }{
		{[]byte{1, 2}, []byte{1, 3}},
		{[]byte{1, 0xff}, []byte{2}},
		{[]byte{0xff, 0xff}, nil},
	} {
		if got := prefixEnd(c.in); !bytes.Equal(got, c.want) {
			t.Errorf("prefixEnd(%x) = %x, want %x", c.in, got, c.want)
		}
	}
}
