package logagg_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/weirstream/weir/internal/logagg"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// syncBuf is a bytes.Buffer safe for concurrent writes.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := strings.TrimRight(s.b.String(), "\n")
	if t == "" {
		return nil
	}
	return strings.Split(t, "\n")
}

// text is the handler of weir's processes, without the time.
func text(w io.Writer, level slog.Level) slog.Handler {
	return slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})
}

// setup returns a logger through an aggregating handler with a 30 s
// window on clk, its handler, and its output.
func setup(clk *clock) (*slog.Logger, *logagg.Handler, *syncBuf) {
	out := &syncBuf{}
	h := logagg.New(text(out, slog.LevelInfo), logagg.Options{Now: clk.Now})
	return slog.New(h), h, out
}

// enospc is the error a task's asynchronous snapshot fails with on a
// full disk: the path names the checkpoint.
func enospc(id int) error {
	return fmt.Errorf("write state file: %w", &pathError{op: "write", path: fmt.Sprintf("/tmp/tinyfs/ck/demo/chk-%d/op-1-0.state", id), err: syscall.ENOSPC})
}

func eacces(id int) error {
	return fmt.Errorf("write state file: %w", &pathError{op: "open", path: fmt.Sprintf("/tmp/tinyfs/ck/demo/chk-%d/op-1-0.state", id), err: syscall.EACCES})
}

type pathError struct {
	op, path string
	err      error
}

func (e *pathError) Error() string { return e.op + " " + e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

const declining = "declining checkpoint: asynchronous snapshot failed"

func want(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %d lines:\n%s\nwant %d:\n%s", len(got), strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
	}
}

// TestBurst: 10,000 identical warnings with a new checkpoint id each,
// 3 ms apart (30 s), then 10,000 more: one line and one summary per
// window, the summary with the count and the newest id.
func TestBurst(t *testing.T) {
	clk := newClock()
	log, h, out := setup(clk)
	task := log.With("task", "keyed-sum", "subtask", 0) // as the runtime's task logger
	id := 7
	for range 2 {
		for range 10_000 {
			task.Warn(declining, "checkpoint", id, "err", enospc(id))
			id++
			clk.Add(3 * time.Millisecond)
		}
	}
	if err := h.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	want(t, out.lines(),
		`level=WARN msg="declining checkpoint: asynchronous snapshot failed" task=keyed-sum subtask=0 checkpoint=7 err="write state file: write /tmp/tinyfs/ck/demo/chk-7/op-1-0.state: no space left on device"`,
		`level=WARN msg="declining checkpoint: asynchronous snapshot failed (repeated 9999 times in the last 30s)" task=keyed-sum subtask=0 repeated=9999 window=30s checkpoint=10006 err="write state file: write /tmp/tinyfs/ck/demo/chk-10006/op-1-0.state: no space left on device"`,
		`level=WARN msg="declining checkpoint: asynchronous snapshot failed" task=keyed-sum subtask=0 checkpoint=10007 err="write state file: write /tmp/tinyfs/ck/demo/chk-10007/op-1-0.state: no space left on device"`,
		`level=WARN msg="declining checkpoint: asynchronous snapshot failed (repeated 9999 times in the last 30s)" task=keyed-sum subtask=0 repeated=9999 window=30s checkpoint=20006 err="write state file: write /tmp/tinyfs/ck/demo/chk-20006/op-1-0.state: no space left on device"`,
	)
}

// TestReasonsStaySeparate: a different cause, message or task name is
// its own group; subtask indexes, attempts and ids are not.
func TestReasonsStaySeparate(t *testing.T) {
	clk := newClock()
	log, h, out := setup(clk)
	for i := range 100 {
		log.With("task", "keyed-sum", "subtask", i%4).Warn(declining, "checkpoint", i, "err", enospc(i))
		log.With("task", "keyed-sum", "subtask", i%4).Warn(declining, "checkpoint", i, "err", eacces(i))
		log.With("task", "sink", "subtask", i%4).Warn(declining, "checkpoint", i, "err", enospc(i))
		log.Error("skipping unusable checkpoint", "problem", fmt.Sprintf("/ck/demo/chk-%d: _metadata: checksum mismatch", i))
		log.Warn(fmt.Sprintf("checkpoint %d has metadata but was never registered (its JobManager lost leadership or crashed before registering): not restored", i), "checkpoint", i, "path", fmt.Sprintf("/ck/demo/chk-%d", i))
		log.Warn("task failed; its region fails over", "task", "keyed-sum (2/4)#"+strconv.Itoa(i), "region", i%2, "cause", errors.New("boom"))
		clk.Add(100 * time.Millisecond)
	}
	clk.Add(30 * time.Second)
	h.Flush(context.Background())
	got := out.lines()
	if len(got) != 12 {
		t.Fatalf("got %d lines, want 6 firsts and 6 summaries:\n%s", len(got), strings.Join(got, "\n"))
	}
	for _, l := range got[6:] {
		if !strings.Contains(l, "(repeated 99 times in the last 30s)") || !strings.Contains(l, " repeated=99 window=30s ") {
			t.Errorf("summary %q: want 99 repeats in 30s", l)
		}
		if !strings.Contains(l, "99") {
			t.Errorf("summary %q does not show the last occurrence's attributes", l)
		}
	}
	if !strings.Contains(got[7], "permission denied") || !strings.Contains(got[8], "task=sink") {
		t.Errorf("summaries out of order:\n%s", strings.Join(got[6:], "\n"))
	}
}

// TestInfoUntouched: records below WARN pass through as the inner
// handler writes them, every one.
func TestInfoUntouched(t *testing.T) {
	clk := newClock()
	log, h, out := setup(clk)
	plain := &syncBuf{}
	ref := slog.New(text(plain, slog.LevelInfo))
	for i := range 1000 {
		for _, l := range []*slog.Logger{log, ref} {
			l.Info("checkpoint completed", "id", i, "kind", "CHECKPOINT")
			l.Info("checkpoint triggered", "id", i+1, "kind", "CHECKPOINT")
		}
		clk.Add(time.Millisecond)
	}
	h.FlushAll(context.Background())
	want(t, out.lines(), plain.lines()...)
}

// TestNextRecordFlushes: a window that ended is summarized by the next
// record of any group or level, before that record.
func TestNextRecordFlushes(t *testing.T) {
	clk := newClock()
	log, _, out := setup(clk)
	for i := range 5 {
		log.Warn("checkpoint registration refused", "id", i, "err", errors.New("lease lost"))
	}
	clk.Add(31 * time.Second)
	log.Info("checkpoint completed", "id", 9)
	want(t, out.lines(),
		`level=WARN msg="checkpoint registration refused" id=0 err="lease lost"`,
		`level=WARN msg="checkpoint registration refused (repeated 4 times in the last 30s)" repeated=4 window=30s id=4 err="lease lost"`,
		`level=INFO msg="checkpoint completed" id=9`,
	)
}

// TestFlushAll: the end of the process writes every pending summary with
// the part of the window that passed.
func TestFlushAll(t *testing.T) {
	clk := newClock()
	log, h, out := setup(clk)
	log.Warn("network: connection broken", "peer", "tm-1", "err", errors.New("read tcp 127.0.0.1:40123->127.0.0.1:6121: connection reset by peer"))
	clk.Add(2 * time.Second)
	log.Warn("network: connection broken", "peer", "tm-1", "err", errors.New("read tcp 127.0.0.1:40177->127.0.0.1:6121: connection reset by peer"))
	log.Warn("network: connection broken", "peer", "jobmanager", "err", errors.New("read tcp 127.0.0.1:40180->127.0.0.1:6121: connection reset by peer"))
	clk.Add(10 * time.Second)
	h.FlushAll(context.Background())
	want(t, out.lines(),
		`level=WARN msg="network: connection broken" peer=tm-1 err="read tcp 127.0.0.1:40123->127.0.0.1:6121: connection reset by peer"`,
		`level=WARN msg="network: connection broken" peer=jobmanager err="read tcp 127.0.0.1:40180->127.0.0.1:6121: connection reset by peer"`,
		`level=WARN msg="network: connection broken (repeated 1 time in the last 12s)" repeated=1 window=12s peer=tm-1 err="read tcp 127.0.0.1:40177->127.0.0.1:6121: connection reset by peer"`,
	)
	// Nothing is left: a second FlushAll writes nothing.
	h.FlushAll(context.Background())
	if n := len(out.lines()); n != 3 {
		t.Errorf("second FlushAll wrote %d lines", n-3)
	}
}

// TestWithAttrsAndGroups: derived loggers share groups when their
// attributes are equal under the rule; groups qualify keys.
func TestWithAttrsAndGroups(t *testing.T) {
	clk := newClock()
	log, h, out := setup(clk)
	a := log.With("taskmanager", "tm-1")
	b := log.With("taskmanager", "tm-2") // numbers do not split
	c := log.With("taskmanager", "local")
	g := log.WithGroup("kafka")
	a.Warn("lost", "attempt", 1)
	b.Warn("lost", "attempt", 2) // same as a
	c.Warn("lost", "attempt", 3) // its own
	g.Warn("lost", "topic", "in")
	g.Warn("lost", "topic", "in")   // same as the previous
	g.Warn("lost", "topic", "out")  // its own
	log.Warn("lost", "topic", "in") // not in the group: its own
	h.FlushAll(context.Background())
	want(t, out.lines(),
		`level=WARN msg=lost taskmanager=tm-1 attempt=1`,
		`level=WARN msg=lost taskmanager=local attempt=3`,
		`level=WARN msg=lost kafka.topic=in`,
		`level=WARN msg=lost kafka.topic=out`,
		`level=WARN msg=lost topic=in`,
		`level=WARN msg="lost (repeated 1 time in the last 0s)" taskmanager=tm-2 repeated=1 window=0s attempt=2`,
		`level=WARN msg="lost (repeated 1 time in the last 0s)" kafka.repeated=1 kafka.window=0s kafka.topic=in`,
	)
}

// TestIgnoreKeys: string values under ignored keys do not split groups.
func TestIgnoreKeys(t *testing.T) {
	clk := newClock()
	out := &syncBuf{}
	h := logagg.New(text(out, slog.LevelInfo), logagg.Options{Now: clk.Now, IgnoreKeys: []string{"record"}})
	log := slog.New(h)
	log.Warn("malformed input line (not UTF-8): sent to the dead letters", "line", `"a\xff"`, "malformed_so_far", 1)
	log.Warn("malformed input line (not UTF-8): sent to the dead letters", "line", `"b\xfe"`, "malformed_so_far", 2)
	log.Warn("bad record", "record", "x")
	log.Warn("bad record", "record", "y")
	if n := len(out.lines()); n != 2 {
		t.Errorf("got %d lines, want 2:\n%s", n, strings.Join(out.lines(), "\n"))
	}
}

// TestMaxGroups: beyond the bound, records of new groups pass through.
func TestMaxGroups(t *testing.T) {
	clk := newClock()
	out := &syncBuf{}
	h := logagg.New(text(out, slog.LevelInfo), logagg.Options{Now: clk.Now, MaxGroups: 2})
	log := slog.New(h)
	for range 3 {
		for _, m := range []string{"a", "b", "c"} {
			log.Warn(m)
		}
	}
	h.FlushAll(context.Background())
	want(t, out.lines(),
		"level=WARN msg=a", "level=WARN msg=b", "level=WARN msg=c",
		"level=WARN msg=c", "level=WARN msg=c",
		`level=WARN msg="a (repeated 2 times in the last 0s)" repeated=2 window=0s`,
		`level=WARN msg="b (repeated 2 times in the last 0s)" repeated=2 window=0s`,
	)
}

// TestFlushEvery: the ticker writes a summary once its window ended,
// with nothing else logged; stop ends the goroutine.
func TestFlushEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &syncBuf{}
		h := logagg.New(text(out, slog.LevelInfo), logagg.Options{}) // time.Now: the bubble's fake clock
		stop := h.FlushEvery(time.Second)
		defer stop()
		log := slog.New(h)
		for i := range 10 {
			log.Warn("checkpoint declined", "checkpoint", i, "reason", "no space left on device")
		}
		time.Sleep(29 * time.Second)
		synctest.Wait()
		if n := len(out.lines()); n != 1 {
			t.Fatalf("before the window ended: %d lines", n)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		want(t, out.lines(),
			`level=WARN msg="checkpoint declined" checkpoint=0 reason="no space left on device"`,
			`level=WARN msg="checkpoint declined (repeated 9 times in the last 30s)" repeated=9 window=30s checkpoint=9 reason="no space left on device"`,
		)
	})
}

var summaryRE = regexp.MustCompile(`\(repeated (\d+) times? in the last`)

// TestEveryRecordCounted: concurrent loggers on random groups and times;
// every record is either printed or counted in exactly one summary, and
// no group prints two firsts within one window (a naive model of the
// rule, checked on the output).
func TestEveryRecordCounted(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		clk := newClock()
		log, h, out := setup(clk)
		const workers, per = 4, 2000
		var wg sync.WaitGroup
		for w := range workers {
			wseed := rng.Uint64()
			wg.Go(func() {
				r := rand.New(rand.NewPCG(wseed, uint64(w)))
				for i := range per {
					if r.IntN(100) == 0 {
						clk.Add(time.Duration(r.IntN(5000)) * time.Millisecond)
					}
					log.With("subtask", w).Warn("declined", "reason", fmt.Sprint("cause-", string(rune('a'+r.IntN(3)))), "checkpoint", i)
				}
			})
		}
		wg.Wait()
		h.FlushAll(context.Background())
		printed, counted := 0, 0
		for _, l := range out.lines() {
			if m := summaryRE.FindStringSubmatch(l); m != nil {
				n, _ := strconv.Atoi(m[1])
				counted += n
			} else {
				printed++
			}
		}
		if printed+counted != workers*per {
			t.Fatalf("seed %d: %d printed + %d counted, want %d", seed, printed, counted, workers*per)
		}
		if printed > 3*(1+int(clk.Now().Sub(newClock().Now())/(30*time.Second))+1)*2 {
			t.Errorf("seed %d: %d lines printed one by one over %s", seed, printed, clk.Now().Sub(newClock().Now()))
		}
	}
}

// BenchmarkWarnRepeated: a repeated warning, counted (the common case
// in a spiral).
func BenchmarkWarnRepeated(b *testing.B) {
	log := slog.New(logagg.New(text(io.Discard, slog.LevelInfo), logagg.Options{})) // the wall clock, as in a process
	task := log.With("task", "keyed-sum", "subtask", 0)
	err := enospc(7)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		task.Warn(declining, "checkpoint", i, "err", err)
	}
}

// BenchmarkWarnPlain is the baseline: the same warning written by the
// text handler alone.
func BenchmarkWarnPlain(b *testing.B) {
	log := slog.New(text(io.Discard, slog.LevelInfo))
	task := log.With("task", "keyed-sum", "subtask", 0)
	err := enospc(7)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		task.Warn(declining, "checkpoint", i, "err", err)
	}
}

// BenchmarkInfo: an INFO record through the handler (passes through).
func BenchmarkInfo(b *testing.B) {
	log := slog.New(logagg.New(text(io.Discard, slog.LevelInfo), logagg.Options{})) // the wall clock, as in a process
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		log.Info("checkpoint completed", "id", i, "kind", "CHECKPOINT")
	}
}

// BenchmarkInfoPlain is the baseline for BenchmarkInfo.
func BenchmarkInfoPlain(b *testing.B) {
	log := slog.New(text(io.Discard, slog.LevelInfo))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		log.Info("checkpoint completed", "id", i, "kind", "CHECKPOINT")
	}
}

// TestFlushEveryStops: stop ends the goroutine (goleak in TestMain
// checks), twice is harmless.
func TestFlushEveryStops(t *testing.T) {
	h := logagg.New(text(io.Discard, slog.LevelInfo), logagg.Options{})
	stop := h.FlushEvery(time.Millisecond)
	stop()
	stop()
}
