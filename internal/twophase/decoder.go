package twophase

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// decoder reads from b, remembering the first error so that callers check
// once per record instead of after every field.
type decoder struct {
	b   []byte
	err error
}

var errTruncated = errors.New("truncated")

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.err = errTruncated
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("bad uvarint: %w", errTruncated)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("bad varint: %w", errTruncated)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes reads a uvarint length and that many bytes, without copying.
func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = fmt.Errorf("length %d exceeds %d remaining bytes: %w", n, len(d.b), errTruncated)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}
