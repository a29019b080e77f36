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

type concat struct{ buf []byte }

func (c *concat) MergeNewer(value []byte) error {
	c.buf = append(c.buf, value...)
	return nil
}

func (c *concat) MergeOlder(value []byte) error {
	c.buf = append(append(make([]byte, 0, len(value)+len(c.buf)), value...), c.buf...)
	return nil
}

func (c *concat) Finish(bool) ([]byte, io.Closer, error) { return c.buf, nil, nil }
