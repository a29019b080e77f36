package postgrescdc

import (
	"fmt"
	"reflect"
	"strings"
)

// Decode copies a row into a struct of type T by column name: a field
// takes the column its `db:"name"` tag names, or else the column whose
// name equals the field's name, case-insensitively; fields tagged
// `db:"-"` and columns without a field are skipped. A value is assigned
// when its type is assignable or convertible to the field's (int32 to
// int64, string to a named string type, …); a NULL leaves the zero
// value. Other mismatches are errors naming the column and both types.
func Decode[T any](r Row) (T, error) {
	var v T
	rv := reflect.ValueOf(&v).Elem()
	if rv.Kind() != reflect.Struct {
		return v, fmt.Errorf("decode row into %T: not a struct", v)
	}
	fields := fieldsOf(rv.Type())
	for col, val := range r {
		i, ok := fields[strings.ToLower(col)]
		if !ok || val == nil {
			continue
		}
		f := rv.Field(i)
		x := reflect.ValueOf(val)
		switch {
		case x.Type().AssignableTo(f.Type()):
			f.Set(x)
		case f.Kind() == reflect.Pointer && x.Type().AssignableTo(f.Type().Elem()):
			p := reflect.New(f.Type().Elem())
			p.Elem().Set(x)
			f.Set(p)
		case x.Type().ConvertibleTo(f.Type()) && convertible(x.Kind(), f.Kind()):
			f.Set(x.Convert(f.Type()))
		default:
			return v, fmt.Errorf("decode row into %T: column %q of Go type %T does not fit field %s %s", v, col, val, rv.Type().Field(i).Name, f.Type())
		}
	}
	return v, nil
}

// convertible refuses the conversions Go allows that lose meaning
// (an integer to a string makes a rune).
func convertible(from, to reflect.Kind) bool {
	num := func(k reflect.Kind) bool { return k >= reflect.Int && k <= reflect.Float64 }
	return (num(from) && num(to)) || from == to
}

// fieldsOf maps column names to field indexes.
func fieldsOf(t reflect.Type) map[string]int {
	m := map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag, ok := f.Tag.Lookup("db"); ok {
			if tag == "-" {
				continue
			}
			name = tag
		}
		m[strings.ToLower(name)] = i
	}
	return m
}
