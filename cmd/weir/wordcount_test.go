package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/jobs/demo"
)

// wordcountInput writes files of generated lines into dir and returns the
// glob matching them, the number of occurrences of every (lower-cased)
// word, and the one malformed line. Words are letters only, written in
// random case and separated by spaces and punctuation, so the expected
// counts come from the generator, not from a second tokenizer.
func wordcountInput(t *testing.T, dir string) (glob string, counts map[string]int, malformed string) {
	t.Helper()
	vocab := strings.Fields(`alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike
		november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu
		stream barrier checkpoint exactly once state key group sink source`)
	seps := []string{" ", "  ", ", ", ". ", "; ", "\t", " - ", "! ", "? ", " (", ") "}
	rng := rand.New(rand.NewPCG(1, 2))
	counts = map[string]int{}
	malformed = "caf\xe9 au lait, d\xe9j\xe0 vu" // Latin-1, not UTF-8: the whole line is a dead letter
	for f := range 3 {
		var b strings.Builder
		for l := range 4000 {
			if f == 1 && l == 1234 {
				b.WriteString(malformed + "\n")
				continue
			}
			for w := range 1 + rng.IntN(8) {
				word := vocab[rng.IntN(len(vocab))]
				counts[word]++
				switch rng.IntN(3) {
				case 1:
					word = strings.ToUpper(word)
				case 2:
					word = strings.ToUpper(word[:1]) + word[1:]
				}
				if w > 0 {
					b.WriteString(seps[rng.IntN(len(seps))])
				}
				b.WriteString(word)
			}
			b.WriteString(".\n")
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%d.txt", f)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "*.txt"), counts, malformed
}

// TestWordcount counts generated files exactly once, with and without
// injected failures: for every word with n occurrences the committed
// "word,count" lines are exactly "word,1" … "word,n" (so the largest count
// per word is its total), and the malformed line is committed once to
// <out>/malformed and reported on stderr.
func TestWordcount(t *testing.T) {
	in := t.TempDir()
	glob, counts, malformed := wordcountInput(t, in)
	var want []string
	for w, n := range counts {
		for i := 1; i <= n; i++ {
			want = append(want, w+","+strconv.Itoa(i))
		}
	}
	var first []string // committed lines of the failure-free run
	for _, tc := range []struct {
		name     string
		failures int
	}{{"no failures", 0}, {"3 injected failures", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			args := []string{"run", "wordcount", "--input", glob, "--out", out, "--state-dir", filepath.Join(dir, "state"),
				"--parallelism", "2", "--checkpoint-interval", "20ms", "-q"}
			if tc.failures > 0 {
				args = append(args, "--inject-failures", strconv.Itoa(tc.failures), "--fault-seed", "11")
			}
			res := runWeir(t, time.Minute, args...)
			wantExit(t, res, 0)
			if tc.failures > 0 {
				wantFired(t, res.stderr, tc.failures)
			}
			got := committed(t, out)
			if d := demo.Diff(want, got); d != "" {
				t.Errorf("counts: %s", d)
			}
			totals := map[string]int{}
			for _, l := range got {
				w, c, ok := strings.Cut(l, ",")
				n, err := strconv.Atoi(c)
				if !ok || err != nil {
					t.Fatalf("committed line %q is not \"word,count\"", l)
				}
				totals[w] = max(totals[w], n)
			}
			if !equalCounts(totals, counts) {
				t.Errorf("final counts (max per word) %v, want %v", sorted(totals), sorted(counts))
			}
			dead := filepath.Join(out, "malformed")
			if bad := committed(t, dead); len(bad) != 1 || bad[0] != strconv.Quote(malformed) {
				t.Errorf("dead letters %q, want exactly [%q]", bad, strconv.Quote(malformed))
			}
			wantContains(t, res.stderr, "malformed input line (not UTF-8)", strconv.Quote(strconv.Quote(malformed)),
				fmt.Sprintf("1 malformed lines in %s", dead))
			assertNoInProgress(t, out)
			assertNoInProgress(t, dead)
			if first == nil {
				first = got
			} else if d := demo.Diff(first, got); d != "" {
				t.Errorf("differs from the failure-free run: %s", d)
			}
		})
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func sorted(m map[string]int) []string {
	var s []string
	for k, v := range m {
		s = append(s, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(s)
	return s
}
