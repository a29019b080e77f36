package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A small export: the files' line counts (a header and one line per
// record, no field spanning lines: Nexmark's strings hold no newline) and
// the summary line.
func TestNexmarkEvents(t *testing.T) {
	out := filepath.Join(t.TempDir(), "events")
	r := runWeir(t, time.Minute, "tools", "nexmark-events", "--events", "1003", "--first-event-rate", "1000", "--base-time", "2026-01-02T00:00:00Z", "--out", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if want := "wrote 1003 events to " + out + ": 21 people, 62 auctions, 920 bids\n"; r.stderr != want {
		t.Fatalf("stderr %q, want %q", r.stderr, want)
	}
	for name, want := range map[string]int{"person.csv": 21, "auction.csv": 62, "bid.csv": 920} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(b, []byte("\n")); n != want+1 {
			t.Errorf("%s: %d lines, want a header and %d records", name, n, want)
		}
	}
	b, _ := os.ReadFile(filepath.Join(out, "person.csv"))
	if first := strings.SplitN(string(b), "\n", 3)[1]; !strings.HasPrefix(first, "1000,") || !strings.Contains(first, ",1767312000000,") {
		t.Errorf("first person %q: want id 1000 at 2026-01-02", first)
	}
}

// Bad flags exit 2 with a message naming the flag, and write nothing.
func TestNexmarkEventsBadFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--events", "10"}, "--out"},
		{[]string{"--events", "0", "--out", dir}, "--events"},
		{[]string{"--first-event-rate", "-1", "--out", dir}, "--first-event-rate"},
		{[]string{"--base-time", "yesterday", "--out", dir}, "--base-time"},
		{[]string{"--rate-limit", "5", "--out", dir}, "--rate-limit"},
	} {
		r := runWeir(t, time.Minute, append([]string{"tools", "nexmark-events"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message naming %s", tc.args, r.code, r.stderr, tc.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("bad flags wrote %d files", len(ents))
	}
}
