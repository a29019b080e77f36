package postgrescdc

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/codec"
)

// TestChangeEncoding: snapshot rows of many column types, as pgx decodes
// them, and a log-style update with a before row and NULLs, read back
// equal from the encoding weir's channels use (codec.For picks the
// Change's MarshalBinary); a truncated encoding is an error.
func TestChangeEncoding(t *testing.T) {
	src, _ := newDB(t)
	db := connect(t, src)
	exec(t, db, "CREATE TYPE mood AS ENUM ('sad', 'ok')")
	exec(t, db, `CREATE TABLE every (id bigint PRIMARY KEY, i2 smallint, i4 int, f8 float8, f4 real, n numeric(12,3), b bool, s text, v varchar(9),
		ts timestamp, tz timestamptz, d date, u uuid, j jsonb, js json, by bytea, arr int[], m mood, iv interval, nul text)`)
	exec(t, db, `INSERT INTO every VALUES (1, 2, 3, 4.5, 5.25, 123456.789, true, 'text ü', 'var', '2026-12-06 10:11:12.123456', '2026-12-06 10:11:12.5+02', '2026-12-06',
		'0f8fad5b-d9cb-469f-a165-70867728950e', '{"a": [1, "x"]}', '{"b": 2}', '\xdeadbeef', '{1,2,3}', 'ok', '1 day 2 hours', NULL)`)
	rows, err := db.Query(context.Background(), "SELECT * FROM every")
	if err != nil {
		t.Fatal(err)
	}
	var changes []Change
	fds := rows.FieldDescriptions()
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		c := Change{Op: OpRead, Schema: "public", Table: "every", After: Row{}, CommitTime: time.Now()}
		for i, fd := range fds {
			c.Columns = append(c.Columns, Column{Name: fd.Name, TypeOID: fd.DataTypeOID, TypeMod: fd.TypeModifier, Key: fd.Name == "id"})
			c.After[fd.Name] = vals[i]
		}
		changes = append(changes, c)
	}
	rows.Close()
	if len(changes) != 1 {
		t.Fatalf("read %d rows", len(changes))
	}
	upd := changes[0]
	upd.Op, upd.LSN, upd.Xid, upd.TxFirst, upd.TxLast = OpUpdate, 0x16B3748, 7411, true, true
	upd.Before = Row{"id": int64(1), "s": nil}
	upd.Columns = append([]Column(nil), upd.Columns...)
	upd.Columns[0].Missing, upd.Columns[0].HasMissing = "7", true
	changes = append(changes, upd, Change{Op: OpDelete, Before: Row{"id": int64(2)}, Columns: upd.Columns[:1]})

	cd, err := codec.For[Change]()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		b := cd.Append(nil, c)
		got, n, err := cd.Decode(b)
		if err != nil || n != len(b) {
			t.Fatalf("%s: decode: %d of %d bytes: %v", c.Op, n, len(b), err)
		}
		for name, want := range c.After {
			if g := got.After[name]; !reflect.DeepEqual(g, want) {
				if wt, ok := want.(time.Time); ok {
					if gt, ok := g.(time.Time); ok && gt.Equal(wt) {
						continue // the same instant; the zone may differ
					}
				}
				t.Errorf("%s: column %s: got %#v (%T), want %#v (%T)", c.Op, name, g, g, want, want)
			}
		}
		got.After, c.After = nil, nil
		if !got.CommitTime.Equal(c.CommitTime) {
			t.Errorf("commit time %v, want %v", got.CommitTime, c.CommitTime)
		}
		got.CommitTime, c.CommitTime = time.Time{}, time.Time{}
		if !reflect.DeepEqual(got, c) {
			t.Errorf("%s: got %+v\nwant %+v", c.Op, got, c)
		}
		for cut := 1; cut < len(b); cut += 7 {
			var x Change
			if err := x.UnmarshalBinary(b[:cut]); err == nil {
				t.Errorf("%s: %d of %d bytes decoded without an error", c.Op, cut, len(b))
				break
			}
		}
	}
	if _, err := codec.For[routed](); err != nil {
		t.Errorf("the planner's records have no encoding: %v", err)
	}
}
