package postgrescdc

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
)

// keyVal is one primary key column's value in chunk bounds: integer
// columns by value, text columns by their bytes, which is the order of
// COLLATE "C" that the chunk queries sort by.
type keyVal struct {
	I int64
	S string
}

// keyKind is how a primary key column compares.
type keyKind uint8

const (
	kindInt keyKind = iota
	kindText
)

// keyKindOf tells how a key column of type typ (format_type's name)
// compares, or that the source cannot chunk by it.
func keyKindOf(table, column, typ string) (keyKind, error) {
	switch typ {
	case "smallint", "integer", "bigint":
		return kindInt, nil
	case "text", "character varying":
		return kindText, nil
	}
	if strings.HasPrefix(typ, "character varying(") {
		return kindText, nil
	}
	return 0, fmt.Errorf("table %s: primary key column %q has type %s; the snapshot chunks by integer (smallint, integer, bigint) or text (text, varchar) keys only: capture a table with such a key", table, column, typ)
}

// keyOf converts a decoded key column value.
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
			return nil, fmt.Errorf("key value %v of type %T: not an integer or text", v, v)
		}
	}
	return k, nil
}

// compareKeys orders keys as the chunk queries do.
func compareKeys(kinds []keyKind, a, b []keyVal) int {
	for i := range kinds {
		var c int
		if kinds[i] == kindInt {
			c = cmp.Compare(a[i].I, b[i].I)
		} else {
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
		if kinds[i] == kindInt {
			out[i] = k[i].I
		} else {
			out[i] = k[i].S
		}
	}
	return out
}
