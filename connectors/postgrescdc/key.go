package postgrescdc

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// keyVal is one primary key column's value in chunk bounds, held so that
// it compares as PostgreSQL orders the column: integer columns by value;
// text columns by their bytes, the order of COLLATE "C" that the chunk
// queries sort by; uuid columns by their 16 bytes (PostgreSQL compares
// uuids byte by byte); timestamp, timestamptz and date columns by
// microseconds since 1970 in I (PostgreSQL stores them as microseconds
// and orders them by value).
type keyVal struct {
	I int64
	S string
}

// keyKind is how a primary key column compares.
type keyKind uint8

const (
	kindInt keyKind = iota
	kindText
	kindUUID
	kindTime
)

// keyKindOf tells how a key column of type typ (format_type's name)
// compares, or that the source cannot chunk by it.
func keyKindOf(table, column, typ string) (keyKind, error) {
	switch typ {
	case "smallint", "integer", "bigint":
		return kindInt, nil
	case "text", "character varying":
		return kindText, nil
	case "uuid":
		return kindUUID, nil
	case "timestamp with time zone", "timestamp without time zone", "date":
		return kindTime, nil
	}
	if strings.HasPrefix(typ, "character varying(") {
		return kindText, nil
	}
	if strings.HasPrefix(typ, "timestamp(") {
		return kindTime, nil
	}
	return 0, fmt.Errorf("table %s: primary key column %q has type %s; the snapshot chunks by integer (smallint, integer, bigint), text (text, varchar), uuid or time (timestamp, timestamptz, date) keys only: capture a table with such a key", table, column, typ)
}

// keyOf converts a decoded key column value (pgx's decoding, binary in
// the snapshot and text in the log, gives the same Go types).
func keyOf(kinds []keyKind, vals []any) ([]keyVal, error) {
	k := make([]keyVal, len(vals))
	for i, v := range vals {
		switch x := v.(type) {
		case int16:
			k[i].I = int64(x)
		case int32:
			k[i].I = int64(x)
		case int64:
			k[i].I = x
		case [16]byte:
			k[i].S = string(x[:])
		case time.Time:
			k[i].I = x.UnixMicro()
		case string:
			if kinds[i] == kindInt {
				n, err := strconv.ParseInt(x, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("key value %q: %w", x, err)
				}
				k[i].I = n
			} else {
				k[i].S = x
			}
		default:
			// An infinite timestamp or date comes as pgtype's
			// InfinityModifier, which has no place among microseconds.
			return nil, fmt.Errorf("key value %v of type %T: not an integer, text, uuid or finite time", v, v)
		}
	}
	return k, nil
}

// compareKeys orders keys as the chunk queries do.
func compareKeys(kinds []keyKind, a, b []keyVal) int {
	for i := range kinds {
		var c int
		switch kinds[i] {
		case kindInt, kindTime:
			c = cmp.Compare(a[i].I, b[i].I)
		default:
			c = strings.Compare(a[i].S, b[i].S)
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// keyArgs are a key's values as query arguments.
func keyArgs(kinds []keyKind, k []keyVal) []any {
	out := make([]any, len(k))
	for i := range k {
		switch kinds[i] {
		case kindInt:
			out[i] = k[i].I
		case kindUUID:
			var u [16]byte
			copy(u[:], k[i].S)
			out[i] = u
		case kindTime:
			// UTC: for timestamp without time zone and date pgx sends the
			// wall clock, which in UTC is what UnixMicro counted.
			out[i] = time.UnixMicro(k[i].I).UTC()
		default:
			out[i] = k[i].S
		}
	}
	return out
}
