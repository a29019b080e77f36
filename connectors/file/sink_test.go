package file

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir"
)

func newSink(t *testing.T, dir, uid string, subtask int, restored ...Txn) *Sink {
	t.Helper()
	s, err := NewSink(dir, uid, subtask)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Open(restored); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func lines(ss ...string) [][]byte {
	var out [][]byte
	for _, s := range ss {
		out = append(out, []byte(s))
	}
	return out
}

// must fails the test on err; it keeps the protocol steps readable.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func begin(t *testing.T, s *Sink) Txn {
	t.Helper()
	txn, err := s.Begin()
	must(t, err)
	return txn
}

func wantCommitted(t *testing.T, dir string, want ...string) {
	t.Helper()
	got, err := ReadCommitted(dir)
	must(t, err)
	if !slices.Equal(got, want) {
		t.Fatalf("committed lines = %q, want %q", got, want)
	}
}

func wantFiles(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	must(t, err)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("files = %q, want %q", got, want)
	}
}

func TestCommitVisibility(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out") // created by NewSink
	s := newSink(t, dir, "snk", 2)
	a := begin(t, s)
	if want := (Txn{Name: "part-snk-2-0", Seq: 0}); a != want {
		t.Fatalf("first txn = %+v, want %+v", a, want)
	}
	must(t, s.Write(a, lines("a1", "a2")))
	must(t, s.Write(a, lines("", "a4")))
	wantCommitted(t, dir)
	must(t, s.PreCommit(a))
	must(t, s.PreCommit(a)) // already pre-committed: no-op
	b := begin(t, s)
	must(t, s.Write(b, lines("b1")))
	wantFiles(t, dir, ".part-snk-2-0.inprogress", ".part-snk-2-1.inprogress")
	wantCommitted(t, dir)
	must(t, s.Commit(a))
	wantFiles(t, dir, ".part-snk-2-1.inprogress", "part-snk-2-0")
	wantCommitted(t, dir, "a1", "a2", "", "a4")
	must(t, s.PreCommit(b))
	must(t, s.Commit(b))
	wantCommitted(t, dir, "a1", "a2", "", "a4", "b1")
	b0, err := os.ReadFile(filepath.Join(dir, "part-snk-2-0"))
	must(t, err)
	if string(b0) != "a1\na2\n\na4\n" {
		t.Fatalf("part file = %q", b0)
	}
}

func TestIdempotentCommitAndAbort(t *testing.T) {
	dir := t.TempDir()
	s := newSink(t, dir, "snk", 0)
	a := begin(t, s)
	must(t, s.Write(a, lines("x")))
	must(t, s.PreCommit(a))
	must(t, s.Commit(a))
	must(t, s.Commit(a))
	wantCommitted(t, dir, "x")
	if err := s.Abort(a); !errors.Is(err, weir.ErrAlreadyCommitted) {
		t.Fatalf("abort committed = %v, want ErrAlreadyCommitted", err)
	}
	wantCommitted(t, dir, "x")

	b := begin(t, s)
	must(t, s.Write(b, lines("never")))
	must(t, s.Abort(b)) // open: closed and removed
	must(t, s.Abort(b))
	c := begin(t, s)
	must(t, s.Write(c, lines("never either")))
	must(t, s.PreCommit(c))
	must(t, s.Abort(c)) // pre-committed: removed
	must(t, s.Abort(c))
	wantFiles(t, dir, "part-snk-0-0")
	if err := s.Write(b, lines("late")); err == nil || err.Error() != "file sink snk/0: write to part-snk-0-1: not open (not begun, already pre-committed, or aborted)" {
		t.Fatalf("write after abort = %v", err)
	}
}

// A crash after Commit renamed the file but before the caller learned it:
// the restored task commits the same handle again and succeeds.
func TestCommitAfterCrashAlreadyRenamed(t *testing.T) {
	dir := t.TempDir()
	s1 := newSink(t, dir, "snk", 0)
	a := begin(t, s1)
	must(t, s1.Write(a, lines("one", "two")))
	must(t, s1.PreCommit(a))
	must(t, s1.Commit(a))
	next := begin(t, s1) // the open txn at the crash
	must(t, s1.Write(next, lines("uncovered")))
	// crash: s1 is dropped without Close.

	s2 := newSink(t, dir, "snk", 0, a)
	must(t, s2.Commit(a))
	wantCommitted(t, dir, "one", "two")
	wantFiles(t, dir, "part-snk-0-0")
	if got := begin(t, s2); got.Seq != 2 {
		t.Fatalf("seq after restore = %d, want 2 (after the leftover 1)", got.Seq)
	}
}

func TestCommitBothMissing(t *testing.T) {
	dir := t.TempDir()
	s := newSink(t, dir, "snk", 0)
	err := s.Commit(Txn{Name: "part-snk-0-7", Seq: 7})
	want := fmt.Sprintf("file sink snk/0: commit part-snk-0-7: neither %s nor %s exists: pre-committed transaction lost",
		filepath.Join(dir, ".part-snk-0-7.inprogress"), filepath.Join(dir, "part-snk-0-7"))
	if !errors.Is(err, weir.ErrTransactionLost) || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

func TestOpenCleansLeftoversKeepsRestored(t *testing.T) {
	dir := t.TempDir()
	s1 := newSink(t, dir, "snk", 1)
	t0, t1, t2 := begin(t, s1), begin(t, s1), begin(t, s1)
	must(t, s1.Write(t1, lines("covered")))
	for _, txn := range []Txn{t0, t1} {
		must(t, s1.PreCommit(txn))
	}
	must(t, s1.Write(t2, lines("open at crash")))
	must(t, s1.Close())
	// Files of other subtasks and uids, and foreign files, are not ours.
	for _, name := range []string{".part-snk-10-4.inprogress", ".part-snk-1-x.inprogress", ".part-snk-2-0.inprogress", ".part-other-1-9.inprogress", "notes.txt", "part-snk-1-9"} {
		must(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644))
	}
	s2 := newSink(t, dir, "snk", 1, t1)
	wantFiles(t, dir, ".part-other-1-9.inprogress", ".part-snk-1-1.inprogress", ".part-snk-1-x.inprogress",
		".part-snk-10-4.inprogress", ".part-snk-2-0.inprogress", "notes.txt", "part-snk-1-9")
	must(t, s2.Commit(t1))
	must(t, s2.Commit(t1))
	if err := s2.Commit(t0); !errors.Is(err, weir.ErrTransactionLost) {
		t.Fatalf("commit of a cleaned leftover = %v, want weir.ErrTransactionLost", err)
	}
	if got := begin(t, s2); got != (Txn{Name: "part-snk-1-10", Seq: 10}) {
		t.Fatalf("next txn = %+v, want seq 10, after the visible part-snk-1-9", got)
	}
	wantCommitted(t, dir, "covered") // part-snk-1-9 is empty
	// A restored handle with a higher seq than anything on disk moves the
	// sequence past it too.
	s3 := newSink(t, dir, "snk", 1, Txn{Name: "part-snk-1-40", Seq: 40})
	if got := begin(t, s3); got.Seq != 41 {
		t.Fatalf("seq = %d, want 41", got.Seq)
	}
}

func TestEmptyTxnCommitsEmptyFile(t *testing.T) {
	dir := t.TempDir()
	s := newSink(t, dir, "snk", 0)
	a := begin(t, s)
	must(t, s.PreCommit(a))
	must(t, s.Commit(a))
	wantFiles(t, dir, "part-snk-0-0")
	wantCommitted(t, dir)
}

func TestSinkErrors(t *testing.T) {
	base := t.TempDir()
	notDir := filepath.Join(base, "plain")
	must(t, os.WriteFile(notDir, nil, 0o644))
	dir := filepath.Join(notDir, "out")
	_, err := NewSink(dir, "snk", 0)
	if want := "file sink snk: create directory " + dir + ": "; err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "; check the path and its permissions") {
		t.Fatalf("unwritable dir: err = %v, want prefix %q", err, want)
	}
	for uid, want := range map[string]string{
		"":      "file sink: empty uid; give the sink operator a uid",
		".x":    `file sink: uid ".x" starts with '.'; such part files would be hidden`,
		"a/b":   `file sink: uid "a/b" contains '/'; use letters, digits, '_', '-' and '.'`,
		"sp ce": `file sink: uid "sp ce" contains ' '; use letters, digits, '_', '-' and '.'`,
	} {
		if _, err := NewSink(base, uid, 0); err == nil || err.Error() != want {
			t.Errorf("uid %q: err = %v, want %q", uid, err, want)
		}
	}

	s, err := NewSink(base, "snk", 0)
	must(t, err)
	if _, err := s.Begin(); err == nil || err.Error() != "file sink snk/0: begin before Open or after Close" {
		t.Fatalf("begin before open: %v", err)
	}
	must(t, s.Open(nil))
	if err := s.Open(nil); err == nil {
		t.Fatal("second Open succeeded")
	}
	a := begin(t, s)
	if err := s.Write(a, lines("ok", "bad\nline")); err == nil || err.Error() != `file sink snk/0: write to part-snk-0-0: line "bad\nline" contains a newline; split it first` {
		t.Fatalf("newline: %v", err)
	}
	if err := s.Commit(a); err == nil || err.Error() != "file sink snk/0: commit part-snk-0-0: not pre-committed; call PreCommit at the barrier first" {
		t.Fatalf("commit open txn: %v", err)
	}
	for _, name := range []string{"part-../../etc/x", "../part-x", "", ".part-x"} {
		if err := s.Commit(Txn{Name: name}); err == nil || !strings.Contains(err.Error(), "is not a part file name") {
			t.Errorf("commit %q: %v", name, err)
		}
		if err := s.Abort(Txn{Name: name}); err == nil || !strings.Contains(err.Error(), "is not a part file name") {
			t.Errorf("abort %q: %v", name, err)
		}
	}
	if err := s.PreCommit(Txn{Name: "part-snk-0-9"}); err == nil {
		t.Fatal("pre-commit of an unknown txn succeeded")
	}
	must(t, s.Close())
	if _, err := s.Begin(); err == nil {
		t.Fatal("begin after close succeeded")
	}
}

// TestRandomExactOutput drives sinks through random writes, barriers,
// commits (some lost and repeated), aborts and crashes, and checks that the
// committed output is exactly the multiset of lines of committed
// transactions: nothing lost, nothing duplicated, nothing uncommitted.
func TestRandomExactOutput(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		dir := t.TempDir()
		s := newSink(t, dir, "snk", 0)
		content := map[string][]string{} // by txn name
		var want []string
		committed := map[string]bool{}
		var pending []Txn // pre-committed, not yet committed
		cur := begin(t, s)
		line := 0
		for range 120 {
			switch r := rng.IntN(10); {
			case r < 5: // a batch of records
				var batch []string
				for range rng.IntN(5) {
					batch = append(batch, fmt.Sprintf("s%d-l%d", seed, line))
					line++
				}
				must(t, s.Write(cur, lines(batch...)))
				content[cur.Name] = append(content[cur.Name], batch...)
			case r < 7: // barrier
				must(t, s.PreCommit(cur))
				pending = append(pending, cur)
				cur = begin(t, s)
			case r < 9: // a checkpoint completes; commit a prefix of pending, twice sometimes
				n := rng.IntN(len(pending) + 1)
				for _, p := range pending[:n] {
					must(t, s.Commit(p))
					if rng.IntN(3) == 0 {
						must(t, s.Commit(p))
					}
					if !committed[p.Name] {
						committed[p.Name] = true
						want = append(want, content[p.Name]...)
					}
				}
				pending = pending[n:]
			default: // crash; the restored checkpoint covers a prefix of pending
				n := rng.IntN(len(pending) + 1)
				restored := pending[:n]
				s.Close()
				s = newSink(t, dir, "snk", 0, restored...)
				for _, p := range restored {
					must(t, s.Commit(p))
					committed[p.Name] = true
					want = append(want, content[p.Name]...)
				}
				for _, p := range pending[n:] {
					if err := s.Commit(p); !errors.Is(err, weir.ErrTransactionLost) {
						t.Fatalf("seed %d: uncovered %s after restore: commit = %v, want weir.ErrTransactionLost", seed, p.Name, err)
					}
				}
				pending = nil
				cur = begin(t, s)
			}
		}
		got, err := ReadCommitted(dir)
		must(t, err)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d: committed %d lines, want %d:\ngot  %q\nwant %q", seed, len(got), len(want), got, want)
		}
	}
}

func TestTxnEncoding(t *testing.T) {
	for _, txn := range []Txn{{}, {Name: "part-a-0-5", Seq: 5}, {Name: "part-x-12-18446744073709551615", Seq: 1<<64 - 1}} {
		b, err := txn.MarshalBinary()
		must(t, err)
		var got Txn
		must(t, got.UnmarshalBinary(b))
		if got != txn {
			t.Fatalf("round trip = %+v, want %+v", got, txn)
		}
	}
	for _, b := range [][]byte{nil, {2, 0}, {1}, {1, 0x80}} {
		var got Txn
		if err := got.UnmarshalBinary(b); !errors.Is(err, ErrCorruptTxn) {
			t.Errorf("%x: err = %v, want ErrCorruptTxn", b, err)
		}
	}
}

func FuzzTxnUnmarshal(f *testing.F) {
	b, _ := Txn{Name: "part-a-0-5", Seq: 5}.MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var txn Txn
		if txn.UnmarshalBinary(b) != nil {
			return
		}
		again, err := txn.MarshalBinary()
		must(t, err)
		var txn2 Txn
		if err := txn2.UnmarshalBinary(again); err != nil || txn2 != txn {
			t.Fatalf("round trip = %+v, %v; want %+v", txn2, err, txn)
		}
	})
}
