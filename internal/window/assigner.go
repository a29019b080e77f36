package window

import (
	"errors"
	"fmt"
	"math"
)

// Kind is the shape of an Assigner's windows.
type Kind uint8

const (
	Tumbling Kind = iota + 1 // fixed size, one window per timestamp
	Sliding                  // fixed size every slide, size/slide windows per timestamp
	Session                  // one window per record, merged when they overlap or touch
	Global                   // one window for everything; fired by a count trigger
)

// String is the kind's name.
func (k Kind) String() string {
	switch k {
	case Tumbling:
		return "tumbling"
	case Sliding:
		return "sliding"
	case Session:
		return "session"
	case Global:
		return "global"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// MaxSize bounds window sizes, slides and session gaps (about 36 million
// years in ms). With it, the arithmetic of an assigner cannot overflow for
// a timestamp inside its range (see AppendWindows).
const MaxSize int64 = math.MaxInt64 / 8

// ErrInvalid marks a window configuration that cannot work; the message
// names the parameter and the rule.
var ErrInvalid = errors.New("invalid window configuration")

// ErrTimestamp marks a record whose timestamp no window of the assigner
// can hold: too close to the ends of int64 (including math.MinInt64, the
// "no timestamp" marker of a record that was never given one).
var ErrTimestamp = errors.New("timestamp out of the window range")

// Assigner maps a timestamp to its windows. It is a small value (no
// interface, no allocation) so the operator can call it per record.
type Assigner struct {
	kind   Kind
	domain Domain
	size   int64 // tumbling, sliding: window length; session: gap
	slide  int64 // sliding; tumbling: = size
	offset int64 // tumbling, sliding: starts are ≡ offset (mod slide)
}

func checkSize(what string, v int64) error {
	switch {
	case v <= 0:
		return fmt.Errorf("window: %s %d ms: must be positive: %w", what, v, ErrInvalid)
	case v > MaxSize:
		return fmt.Errorf("window: %s %d ms: must be at most %d ms (window arithmetic would overflow int64): %w", what, v, MaxSize, ErrInvalid)
	}
	return nil
}

// NewTumbling returns windows [s, s+size) with s ≡ offset (mod size): each
// timestamp is in exactly one. |offset| < size, as Flink requires (an offset
// of a whole size is the same windows; say so with a smaller one).
func NewTumbling(d Domain, size, offset int64) (Assigner, error) {
	if err := checkSize("tumbling window size", size); err != nil {
		return Assigner{}, err
	}
	if offset <= -size || offset >= size {
		return Assigner{}, fmt.Errorf("window: tumbling window offset %d ms: must satisfy |offset| < size %d ms: %w", offset, size, ErrInvalid)
	}
	return Assigner{kind: Tumbling, domain: d, size: size, slide: size, offset: offset}, nil
}

// NewSliding returns windows [s, s+size) for every s ≡ offset (mod slide):
// a timestamp is in about size/slide of them. A slide larger than the size
// is allowed, as in Flink: the windows then leave gaps, and a record in a
// gap is in no window (it is dropped, or counted late if it is late).
// |offset| < slide.
func NewSliding(d Domain, size, slide, offset int64) (Assigner, error) {
	if err := checkSize("sliding window size", size); err != nil {
		return Assigner{}, err
	}
	if err := checkSize("sliding window slide", slide); err != nil {
		return Assigner{}, err
	}
	if offset <= -slide || offset >= slide {
		return Assigner{}, fmt.Errorf("window: sliding window offset %d ms: must satisfy |offset| < slide %d ms: %w", offset, slide, ErrInvalid)
	}
	return Assigner{kind: Sliding, domain: d, size: size, slide: slide, offset: offset}, nil
}

// NewSession returns one window [ts, ts+gap) per record; a key's windows
// that overlap or touch merge (MergingSet), so records at most gap apart
// share a session [min ts, max ts + gap).
func NewSession(d Domain, gap int64) (Assigner, error) {
	if err := checkSize("session gap", gap); err != nil {
		return Assigner{}, err
	}
	return Assigner{kind: Session, domain: d, size: gap}, nil
}

// NewGlobal returns the assigner of one window for all records
// (GlobalWindow). It has no time: no lateness, no cleanup; only a count
// trigger fires it. Its Domain is ProcessingTime and IsEventTime false, as
// Flink's global windows, so that no record is ever late for it.
func NewGlobal() Assigner { return Assigner{kind: Global, domain: ProcessingTime} }

// Kind is the shape of the windows.
func (a Assigner) Kind() Kind { return a.kind }

// Domain is the clock the windows are measured on.
func (a Assigner) Domain() Domain { return a.domain }

// IsEventTime reports whether records are assigned by their own timestamps
// and windows end with the watermark (lateness applies).
func (a Assigner) IsEventTime() bool { return a.kind != Global && a.domain == EventTime }

// Merging reports whether the windows must go through a MergingSet.
func (a Assigner) Merging() bool { return a.kind == Session }

// Size is the window size (the gap for sessions, 0 for global).
func (a Assigner) Size() int64 { return a.size }

// Slide is the distance between window starts (the size for tumbling).
func (a Assigner) Slide() int64 { return a.slide }

// Offset shifts window starts.
func (a Assigner) Offset() int64 { return a.offset }

// String names the assigner and its parameters, for errors and logs.
func (a Assigner) String() string {
	switch a.kind {
	case Tumbling:
		return fmt.Sprintf("%s tumbling(size=%d offset=%d)", a.domain, a.size, a.offset)
	case Sliding:
		return fmt.Sprintf("%s sliding(size=%d slide=%d offset=%d)", a.domain, a.size, a.slide, a.offset)
	case Session:
		return fmt.Sprintf("%s session(gap=%d)", a.domain, a.size)
	case Global:
		return "global"
	}
	return "window.Assigner{}"
}

// span bounds how far from ts the arithmetic of AppendWindows reaches.
func (a Assigner) span() int64 { return a.size + a.slide }

// AppendWindows appends the windows of a record at ts to dst, in order of
// start, and returns it (dst[:0] of a reused buffer: no allocation). For
// processing time, ts is the current processing time, not the record's.
//
// The range rule: ts must lie at least 2·(size+slide) from either end of
// int64, so that no start, end or intermediate value overflows; otherwise
// (and for the "no timestamp" marker math.MinInt64) the error wraps
// ErrTimestamp, and the operator reports the record. Real timestamps (ms
// since 1970) are nowhere near.
func (a Assigner) AppendWindows(dst []Window, ts int64) ([]Window, error) {
	if a.kind == Global {
		return append(dst, GlobalWindow()), nil
	}
	if s := 2 * a.span(); ts < math.MinInt64+s || ts > math.MaxInt64-s {
		return dst, fmt.Errorf("window: %s: timestamp %d: must be at least %d ms from either end of int64 (was the record given a timestamp?): %w", a, ts, s, ErrTimestamp)
	}
	switch a.kind {
	case Tumbling:
		s := StartWithOffset(ts, a.offset, a.size)
		dst = append(dst, Window{Start: s, End: s + a.size})
	case Sliding:
		// The starts ≤ ts are last, last-slide, ...; those > ts-size hold
		// ts. Find the first, then append upwards.
		last := StartWithOffset(ts, a.offset, a.slide)
		first := last
		for first-a.slide > ts-a.size {
			first -= a.slide
		}
		for s := first; s <= last; s += a.slide {
			if s > ts-a.size { // false only when slide > size leaves ts in a gap
				dst = append(dst, Window{Start: s, End: s + a.size})
			}
		}
	case Session:
		dst = append(dst, Window{Start: ts, End: ts + a.size})
	}
	return dst, nil
}

// StartWithOffset is the largest s ≤ ts with s ≡ offset (mod size): the
// start of the tumbling window of ts. The remainder is taken non-negative,
// so negative timestamps go to the window below, not toward zero
// (StartWithOffset(-1, 0, 10) = -10). The caller keeps ts-offset and the
// result inside int64 (AppendWindows' range rule).
func StartWithOffset(ts, offset, size int64) int64 {
	r := (ts - offset) % size
	if r < 0 {
		r += size
	}
	return ts - r
}
