package logagg

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultWindow is the window of a group when Options.Window is zero.
const DefaultWindow = 30 * time.Second

// DefaultMaxGroups bounds the groups held at once when Options.MaxGroups
// is zero.
const DefaultMaxGroups = 1024

// DefaultIgnoreKeys are attribute keys whose values never split a group,
// whatever their kind: identifiers of one occurrence. (Numeric values are
// ignored anyway; these keys also cover string-valued ones, such as the
// malformed input line wordcount logs.)
var DefaultIgnoreKeys = []string{"id", "ids", "checkpoint", "attempt", "seq", "line"}

// Options configure a Handler. The zero value is usable.
type Options struct {
	// Window is how long a group collects repeats after its first record
	// (default DefaultWindow).
	Window time.Duration
	// Level is the lowest level that is aggregated (default WARN); records
	// below it pass through unchanged.
	Level slog.Leveler
	// Now is the clock; tests inject one. By default it is the wall
	// clock, read from each record's own time (slog sets it with
	// time.Now), so an INFO record costs no second clock read.
	Now func() time.Time
	// IgnoreKeys are added to DefaultIgnoreKeys.
	IgnoreKeys []string
	// MaxGroups bounds the groups held at once (default
	// DefaultMaxGroups); a record of a new group beyond it passes through
	// unaggregated, so memory stays bounded whatever is logged.
	MaxGroups int
}

// Handler is a slog.Handler that aggregates repeated records before
// passing them to an inner handler (package doc).
//
// The key of a record's group is its level, its message and its
// attributes — the handler's own (WithAttrs, WithGroup) and the record's
// — except what varies per occurrence of the same problem:
//
//   - attributes of a numeric kind (int, uint, float, duration, time) and
//     attributes whose key is in DefaultIgnoreKeys or Options.IgnoreKeys
//     are left out of the key;
//   - in the message and in every other value (strings, errors, anything
//     else formatted with fmt), each run of decimal digits counts as one
//     digit: "chk-7" and "chk-1234", "checkpoint 7 has metadata" and
//     "checkpoint 8 has metadata", "127.0.0.1:40123" and
//     "127.0.0.1:40999" are the same — and so are "tm-1" and "tm-2": the
//     second TaskManager's warning within the window shows in the
//     summary, with its attributes, not at once.
//
// So checkpoint ids, attempts, subtask indexes, counts and durations never
// split a group; a different reason ("no space left on device" against
// "permission denied"), a different task name or a different message
// does. Loggers derived with WithAttrs share groups when their attributes
// are equal under this rule (With("subtask", 0) and With("subtask", 1)),
// and are separate otherwise (With("task", "map") and With("task",
// "sink")). A summary goes out through the handler of the group's last
// record, so it carries that record's own attributes; under WithGroup its
// repeated and window attributes are qualified by the group like any
// attribute.
//
// A Handler is safe for concurrent use; the handlers derived from it share
// its groups.
type Handler struct {
	inner  slog.Handler
	c      *core
	prefix []byte // the key of the handler's own attributes and groups
	group  string // the open groups' qualifier, "a.b." or ""
}

// core is the state the handlers derived from one New share.
type core struct {
	window    time.Duration
	level     slog.Leveler
	now       func() time.Time
	wall      bool // now is time.Now: a record's own time will do
	ignore    map[string]struct{}
	maxGroups int

	bufs sync.Pool // *[]byte for keys

	// next is the earliest end of a window (UnixNano), math.MaxInt64
	// when no group is open: a record checks it without the lock.
	next atomic.Int64

	mu     sync.Mutex
	groups map[string]*group
	seq    uint64 // groups created
}

// group is one open window.
type group struct {
	start time.Time
	end   time.Time
	seq   uint64       // order of creation, for summaries of equal start
	count int          // records counted, not printed, after the first
	last  slog.Record  // the newest counted record
	h     slog.Handler // the inner handler of the newest record
}

// New returns a Handler writing to inner.
func New(inner slog.Handler, o Options) *Handler {
	c := &core{window: o.Window, level: o.Level, now: o.Now, maxGroups: o.MaxGroups, groups: map[string]*group{}}
	if c.window <= 0 {
		c.window = DefaultWindow
	}
	if c.level == nil {
		c.level = slog.LevelWarn
	}
	if c.now == nil {
		c.now, c.wall = time.Now, true
	}
	if c.maxGroups <= 0 {
		c.maxGroups = DefaultMaxGroups
	}
	c.ignore = map[string]struct{}{}
	for _, keys := range [][]string{DefaultIgnoreKeys, o.IgnoreKeys} {
		for _, k := range keys {
			c.ignore[k] = struct{}{}
		}
	}
	c.next.Store(math.MaxInt64)
	c.bufs.New = func() any { b := make([]byte, 0, 256); return &b }
	return &Handler{inner: inner, c: c}
}

// Enabled reports whether the inner handler handles level.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

// Handle passes r on, or counts it as a repeat of its group; first it
// writes the summaries of windows that have ended.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	c := h.c
	now := r.Time
	if !c.wall || now.IsZero() {
		now = c.now() // an injected clock; or a record made without a time
	}
	if r.Level < c.level.Level() {
		err := c.flushDue(ctx, now)
		return errors.Join(err, h.inner.Handle(ctx, r))
	}
	bp := c.bufs.Get().(*[]byte)
	key := h.key((*bp)[:0], r)
	c.mu.Lock()
	due := c.takeDue(now)
	g, ok := c.groups[string(key)] // no allocation for the lookup
	counted := false
	switch {
	case ok:
		g.count++
		g.last = r.Clone()
		g.h = h.inner
		counted = true
	case len(c.groups) < c.maxGroups:
		end := now.Add(c.window)
		c.seq++
		c.groups[string(key)] = &group{start: now, end: end, seq: c.seq}
		if n := end.UnixNano(); n < c.next.Load() {
			c.next.Store(n)
		}
	}
	c.mu.Unlock()
	*bp = key
	c.bufs.Put(bp)
	err := c.emit(ctx, due, now)
	if counted {
		return err
	}
	return errors.Join(err, h.inner.Handle(ctx, r))
}

// WithAttrs returns a handler whose records carry as; it shares the
// groups of h, and as are part of its records' keys.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return h
	}
	p := append([]byte(nil), h.prefix...)
	for _, a := range as {
		p = h.c.appendAttr(p, h.group, a)
	}
	return &Handler{inner: h.inner.WithAttrs(as), c: h.c, prefix: p, group: h.group}
}

// WithGroup returns a handler that qualifies its attributes by name; it
// shares the groups of h.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	p := append(append(append([]byte(nil), h.prefix...), "\x01"...), name...)
	return &Handler{inner: h.inner.WithGroup(name), c: h.c, prefix: p, group: h.group + name + "."}
}

// Flush writes the summaries of the windows that have ended and forgets
// those groups.
func (h *Handler) Flush(ctx context.Context) error {
	return h.c.flushDue(ctx, h.c.now())
}

// FlushAll writes the summaries of every open window, ended or not, and
// forgets every group: for the end of the process. The handler stays
// usable.
func (h *Handler) FlushAll(ctx context.Context) error {
	c := h.c
	now := c.now()
	c.mu.Lock()
	due := make([]*group, 0, len(c.groups))
	for k, g := range c.groups {
		due = append(due, g)
		delete(c.groups, k)
	}
	c.next.Store(math.MaxInt64)
	c.mu.Unlock()
	return c.emit(ctx, due, now)
}

// FlushEvery calls Flush every d from one goroutine until stop is called,
// so that a summary goes out when its window ends even if nothing else is
// logged. stop waits for the goroutine to end.
func (h *Handler) FlushEvery(d time.Duration) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = h.Flush(context.Background())
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); <-exited }) }
}

// flushDue writes the summaries of the windows ended by now.
func (c *core) flushDue(ctx context.Context, now time.Time) error {
	if now.UnixNano() < c.next.Load() {
		return nil
	}
	c.mu.Lock()
	due := c.takeDue(now)
	c.mu.Unlock()
	return c.emit(ctx, due, now)
}

// takeDue removes the groups whose window ended by now and returns those
// with repeats to summarize. c.mu is held.
func (c *core) takeDue(now time.Time) []*group {
	if now.UnixNano() < c.next.Load() {
		return nil
	}
	var due []*group
	next := int64(math.MaxInt64)
	for k, g := range c.groups {
		if !now.Before(g.end) {
			delete(c.groups, k)
			if g.count > 0 {
				due = append(due, g)
			}
			continue
		}
		if n := g.end.UnixNano(); n < next {
			next = n
		}
	}
	c.next.Store(next)
	return due
}

// emit writes one summary per group, oldest window first.
func (c *core) emit(ctx context.Context, due []*group, now time.Time) error {
	if len(due) == 0 {
		return nil
	}
	slices.SortFunc(due, func(a, b *group) int {
		if c := a.start.Compare(b.start); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	var errs []error
	for _, g := range due {
		if g.count == 0 {
			continue
		}
		span := c.window
		if now.Before(g.end) {
			span = roundSpan(now.Sub(g.start))
		}
		r := slog.NewRecord(now, g.last.Level, fmt.Sprintf("%s (repeated %d %s in the last %s)", g.last.Message, g.count, times(g.count), span), g.last.PC)
		r.AddAttrs(slog.Int("repeated", g.count), slog.Duration("window", span))
		g.last.Attrs(func(a slog.Attr) bool { r.AddAttrs(a); return true })
		if err := g.h.Handle(ctx, r); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// roundSpan rounds a part of a window for the summary.
func roundSpan(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}

func times(n int) string {
	if n == 1 {
		return "time"
	}
	return "times"
}
