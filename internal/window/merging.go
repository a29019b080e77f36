package window

import (
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
)

// ErrCorrupt marks bytes that do not decode to a MergingSet.
var ErrCorrupt = errors.New("corrupt merging window set")

// MergingSet is the set of session windows one key holds, each mapped to
// its state window: the window whose state namespace holds its contents.
// When windows merge, the result keeps the state window of one of them, so
// a merge moves only the other windows' state, and a window that grows
// record by record never moves its own (as Flink's MergingWindowSet).
//
// The windows are kept sorted by start and pairwise apart (neither
// overlapping nor touching): every Add merges at once. The operator keeps
// one set per key in keyed state (AppendTo, Decode) and decodes it into a
// reused MergingSet per record, so neither Add nor Decode allocates once
// the buffers have grown.
type MergingSet struct {
	es []entry
	// merged and states back the slices of the Merge that Add returns.
	merged, states []Window
}

type entry struct{ w, state Window }

// Merge is what Add did. Result is the window now holding the added one,
// StateWindow its state window. Windows are the held windows that merged
// into Result and no longer exist; StateWindows their state windows other
// than StateWindow. The operator merges the contents (and trigger state) of
// StateWindows into StateWindow and deletes them, and deletes the timers of
// Windows (Rules.Timers); then it treats Result as the record's window.
// Both slices are empty when nothing merged, and valid until the next Add.
type Merge struct {
	Result, StateWindow Window
	Windows             []Window
	StateWindows        []Window
}

// Len is the number of windows held.
func (s *MergingSet) Len() int { return len(s.es) }

// Reset empties s, keeping its buffers.
func (s *MergingSet) Reset() { s.es = s.es[:0] }

// All yields each held window and its state window, in order of start.
func (s *MergingSet) All() iter.Seq2[Window, Window] {
	return func(yield func(Window, Window) bool) {
		for _, e := range s.es {
			if !yield(e.w, e.state) {
				return
			}
		}
	}
}

// StateWindow is the state window of held window w; false if w is not
// held (a timer of a window that merged away or was cleared).
func (s *MergingSet) StateWindow(w Window) (Window, bool) {
	if i, ok := s.find(w); ok {
		return s.es[i].state, true
	}
	return Window{}, false
}

// find is the index of w, or where a window starting at w.Start goes.
func (s *MergingSet) find(w Window) (int, bool) {
	lo, hi := 0, len(s.es)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.es[m].w.Start < w.Start {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(s.es) && s.es[lo].w == w
}

// Add adds w (a record's window) and merges it with every held window it
// overlaps or touches. Because held windows are apart, those form one run
// and the cover of the run and w touches nothing else, so one Add is at
// most one merge. The result's state window is the one of the earliest
// merged window; a new window alone is its own state window.
func (s *MergingSet) Add(w Window) Merge {
	s.merged, s.states = s.merged[:0], s.states[:0]
	// Held windows are apart, so sorted by start they are sorted by end
	// too: the run starts at the first that does not end before w starts
	// and goes on while they intersect w.
	lo, n := 0, len(s.es)
	for lo < n { // binary search: the first that ends at or after w.Start
		m := int(uint(lo+n) >> 1)
		if s.es[m].w.End < w.Start {
			lo = m + 1
		} else {
			n = m
		}
	}
	hi := lo
	for hi < len(s.es) && s.es[hi].w.Intersects(w) {
		hi++
	}
	switch {
	case lo == hi: // nothing to merge with: a new window
		s.es = append(s.es, entry{})
		copy(s.es[lo+1:], s.es[lo:])
		s.es[lo] = entry{w: w, state: w}
		return Merge{Result: w, StateWindow: w}
	case hi == lo+1 && s.es[lo].w.Cover(w) == s.es[lo].w: // inside a held window
		return Merge{Result: s.es[lo].w, StateWindow: s.es[lo].state}
	}
	result, state := w, s.es[lo].state
	for _, e := range s.es[lo:hi] {
		result = result.Cover(e.w)
		s.merged = append(s.merged, e.w)
		if e.state != state {
			s.states = append(s.states, e.state)
		}
	}
	s.es[lo] = entry{w: result, state: state}
	s.es = append(s.es[:lo+1], s.es[hi:]...)
	return Merge{Result: result, StateWindow: state, Windows: s.merged, StateWindows: s.states}
}

// Remove forgets held window w (its cleanup time passed, or it was late on
// arrival); false if w was not held.
func (s *MergingSet) Remove(w Window) bool {
	i, ok := s.find(w)
	if ok {
		s.es = append(s.es[:i], s.es[i+1:]...)
	}
	return ok
}

// mergingSetVersion is the first byte of an encoded set, so a later format
// can be told apart.
const mergingSetVersion = 1

// AppendTo appends the encoding of s to dst: a version byte, the number of
// windows, then each window and its state window as four varints.
func (s *MergingSet) AppendTo(dst []byte) []byte {
	dst = append(dst, mergingSetVersion)
	dst = binary.AppendUvarint(dst, uint64(len(s.es)))
	for _, e := range s.es {
		dst = binary.AppendVarint(dst, e.w.Start)
		dst = binary.AppendVarint(dst, e.w.End)
		dst = binary.AppendVarint(dst, e.state.Start)
		dst = binary.AppendVarint(dst, e.state.End)
	}
	return dst
}

// Decode replaces the contents of s with the set encoded in b (AppendTo),
// reusing s's buffers. Bytes that are not a valid set (wrong version,
// truncated, trailing bytes, windows empty, unsorted or not apart) give an
// error wrapping ErrCorrupt, and s is left empty.
func (s *MergingSet) Decode(b []byte) error {
	s.es = s.es[:0]
	err := s.decode(b)
	if err != nil {
		s.es = s.es[:0]
		return fmt.Errorf("window: decode merging window set (%d bytes): %w: %w", len(b), ErrCorrupt, err)
	}
	return nil
}

func (s *MergingSet) decode(b []byte) error {
	if len(b) == 0 || b[0] != mergingSetVersion {
		return errors.New("unknown version")
	}
	b = b[1:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) { // each window takes at least 4 bytes
		return errors.New("bad window count")
	}
	b = b[k:]
	var v [4]int64
	for i := range n {
		for j := range v {
			x, k := binary.Varint(b)
			if k <= 0 {
				return fmt.Errorf("window %d truncated", i)
			}
			v[j], b = x, b[k:]
		}
		e := entry{w: Window{v[0], v[1]}, state: Window{v[2], v[3]}}
		if e.w.Start >= e.w.End || e.state.Start >= e.state.End {
			return fmt.Errorf("window %d: %v with state window %v: empty", i, e.w, e.state)
		}
		if l := len(s.es); l > 0 && s.es[l-1].w.End >= e.w.Start {
			return fmt.Errorf("window %d: %v not apart from %v", i, e.w, s.es[l-1].w)
		}
		s.es = append(s.es, e)
	}
	if len(b) != 0 {
		return fmt.Errorf("%d trailing bytes", len(b))
	}
	return nil
}
