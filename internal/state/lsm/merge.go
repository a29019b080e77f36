package lsm

import (
	"io"

	"github.com/cockroachdb/pebble/v2"
)

// listMerger makes list appends blind writes: ListState.Add stores its
// element frames as a merge operand, and reads (or compactions) concatenate
// the operands in order. A frame carries its length, so the concatenation
// of frame sequences is again a frame sequence. The name is stored in the
// store's options file; a new list format gets a new name.
var listMerger = &pebble.Merger{
	Name: "weir.list.v1",
	Merge: func(_, value []byte) (pebble.ValueMerger, error) {
		return &concat{buf: append([]byte(nil), value...)}, nil
	},
}

// concat gathers the operands. Older ones arrive newest first and are
// kept apart until Finish: prepending each to the buffer copied the whole
// list per operand, so reading a list built by n Adds cost O(n²).
type concat struct {
	buf   []byte   // the first operand and every newer one, in order
	older [][]byte // older operands, newest first (copies: Pebble reuses them)
}

func (c *concat) MergeNewer(value []byte) error {
	c.buf = append(c.buf, value...)
	return nil
}

func (c *concat) MergeOlder(value []byte) error {
	c.older = append(c.older, append([]byte(nil), value...))
	return nil
}

func (c *concat) Finish(bool) ([]byte, io.Closer, error) {
	if len(c.older) == 0 {
		return c.buf, nil, nil
	}
	n := len(c.buf)
	for _, o := range c.older {
		n += len(o)
	}
	out := make([]byte, 0, n)
	for i := len(c.older) - 1; i >= 0; i-- {
		out = append(out, c.older[i]...)
	}
	return append(out, c.buf...), nil, nil
}
