package postgrescdc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgtype"
)

// A Change crosses a channel between tasks (another process, or
// unaligned checkpoints' channel state) in this encoding; it is what lets
// the parallel snapshot's edges (parallel.go) leave one process. Row
// values are pgx's Go values of any column type, so each is written in
// PostgreSQL's text format for its column's type and decoded as the log
// decodes values (stream.go, decode): a value reads back as the Go type
// pgx gives that type. Layout, version 1:
//
//	version byte, op byte, schema, table, columns (uvarint count; each
//	name, type oid uvarint, type modifier varint, key byte, missing,
//	has-missing byte), before row, after row, LSN uvarint, xid uvarint,
//	commit time (time.Time.MarshalBinary, length-prefixed), TxFirst
//	byte, TxLast byte.
//
// A row is a uvarint, 0 for nil, else 1 + its number of values; each
// value its column name, a byte (0 NULL, 1 text) and, for text, the
// bytes. Strings and byte strings are uvarint-length-prefixed.
const changeCodecVersion = 1

// errChangeEncoding marks bytes that are not a Change's encoding.
var errChangeEncoding = errors.New("postgres cdc: corrupt change encoding")

// typeMaps lends pgtype.Maps to encoders and decoders (a Map caches
// plans as it is used, so it is not shared between goroutines).
var typeMaps = sync.Pool{New: func() any { return pgtype.NewMap() }}

// MarshalBinary encodes the change (encoding.BinaryMarshaler): weir uses
// it where a Change crosses a channel between tasks. Every row value is
// written in PostgreSQL's text format for its column's type.
func (c *Change) MarshalBinary() ([]byte, error) {
	m := typeMaps.Get().(*pgtype.Map)
	defer typeMaps.Put(m)
	b := []byte{changeCodecVersion, byte(c.Op)}
	b = appendString(b, c.Schema)
	b = appendString(b, c.Table)
	b = binary.AppendUvarint(b, uint64(len(c.Columns)))
	for _, col := range c.Columns {
		b = appendString(b, col.Name)
		b = binary.AppendUvarint(b, uint64(col.TypeOID))
		b = binary.AppendVarint(b, int64(col.TypeMod))
		b = append(b, boolByte(col.Key))
		b = appendString(b, col.Missing)
		b = append(b, boolByte(col.HasMissing))
	}
	var err error
	if b, err = appendRow(b, m, c.Columns, c.Before); err != nil {
		return nil, fmt.Errorf("postgres cdc: encode a change of %s.%s: before: %w", c.Schema, c.Table, err)
	}
	if b, err = appendRow(b, m, c.Columns, c.After); err != nil {
		return nil, fmt.Errorf("postgres cdc: encode a change of %s.%s: after: %w", c.Schema, c.Table, err)
	}
	b = binary.AppendUvarint(b, uint64(c.LSN))
	b = binary.AppendUvarint(b, uint64(c.Xid))
	t, err := c.CommitTime.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("postgres cdc: encode a change of %s.%s: commit time: %w", c.Schema, c.Table, err)
	}
	b = appendBytes(b, t)
	return append(b, boolByte(c.TxFirst), boolByte(c.TxLast)), nil
}

func appendRow(b []byte, m *pgtype.Map, cols []Column, r Row) ([]byte, error) {
	if r == nil {
		return binary.AppendUvarint(b, 0), nil
	}
	b = binary.AppendUvarint(b, uint64(len(r))+1)
	names := make([]string, 0, len(r))
	for name := range r {
		names = append(names, name)
	}
	slices.Sort(names) // one encoding per row
	for _, name := range names {
		b = appendString(b, name)
		v := r[name]
		if v == nil {
			b = append(b, 0)
			continue
		}
		i := slices.IndexFunc(cols, func(c Column) bool { return c.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("column %q is not among the change's columns", name)
		}
		text, err := m.Encode(cols[i].TypeOID, pgtype.TextFormatCode, v, nil)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", name, err)
		}
		if text == nil { // a typed nil: SQL NULL
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		b = appendBytes(b, text)
	}
	return b, nil
}

// UnmarshalBinary decodes what MarshalBinary encoded
// (encoding.BinaryUnmarshaler).
func (c *Change) UnmarshalBinary(data []byte) error {
	m := typeMaps.Get().(*pgtype.Map)
	defer typeMaps.Put(m)
	d := decoder{b: data}
	if v := d.byte(); v != changeCodecVersion {
		if d.err != nil {
			return d.err
		}
		return fmt.Errorf("%w: version %d, this build reads %d", errChangeEncoding, v, changeCodecVersion)
	}
	var out Change
	out.Op = Op(d.byte())
	out.Schema, out.Table = d.string(), d.string()
	n := d.count()
	for i := 0; i < n && d.err == nil; i++ {
		col := Column{Name: d.string()}
		col.TypeOID = uint32(d.uvarint())
		col.TypeMod = int32(d.varint())
		col.Key = d.byte() == 1
		col.Missing = d.string()
		col.HasMissing = d.byte() == 1
		out.Columns = append(out.Columns, col)
	}
	var err error
	if out.Before, err = d.row(m, out.Columns); err != nil {
		return err
	}
	if out.After, err = d.row(m, out.Columns); err != nil {
		return err
	}
	out.LSN = pglogrepl.LSN(d.uvarint())
	out.Xid = uint32(d.uvarint())
	if t := d.bytes(); d.err == nil {
		if err := out.CommitTime.UnmarshalBinary(t); err != nil {
			return fmt.Errorf("%w: commit time: %v", errChangeEncoding, err)
		}
	}
	out.TxFirst, out.TxLast = d.byte() == 1, d.byte() == 1
	if d.err != nil {
		return d.err
	}
	if len(d.b) != 0 {
		return fmt.Errorf("%w: %d bytes after the change", errChangeEncoding, len(d.b))
	}
	*c = out
	return nil
}

// decoder reads the encoding; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated %s", errChangeEncoding, what)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail("byte")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a count that the bytes left can hold (one byte at least
// per item).
func (d *decoder) count() int {
	v := d.uvarint()
	if v > uint64(len(d.b)) || v > math.MaxInt32 {
		d.fail("count")
		return 0
	}
	return int(v)
}

func (d *decoder) bytes() []byte {
	n := d.count()
	if d.err != nil {
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string { return string(d.bytes()) }

func (d *decoder) row(m *pgtype.Map, cols []Column) (Row, error) {
	n := d.uvarint()
	if d.err != nil || n == 0 {
		return nil, d.err
	}
	if n-1 > uint64(len(d.b)) {
		d.fail("row")
		return nil, d.err
	}
	r := make(Row, n-1)
	for i := uint64(1); i < n && d.err == nil; i++ {
		name := d.string()
		if d.byte() == 0 {
			r[name] = nil
			continue
		}
		text := d.bytes()
		if d.err != nil {
			break
		}
		var oid uint32
		if i := slices.IndexFunc(cols, func(c Column) bool { return c.Name == name }); i >= 0 {
			oid = cols[i].TypeOID
		}
		v, err := decodeText(m, oid, text)
		if err != nil {
			return nil, fmt.Errorf("postgres cdc: decode column %q: %w", name, err)
		}
		r[name] = v
	}
	return r, d.err
}

// decodeText decodes a value in PostgreSQL's text format as the log's
// values are decoded (source.decode).
func decodeText(m *pgtype.Map, oid uint32, text []byte) (any, error) {
	if dt, ok := m.TypeForOID(oid); ok {
		return dt.Codec.DecodeValue(m, oid, pgtype.TextFormatCode, text)
	}
	return string(text), nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}
