package codec

import (
	"fmt"
	"reflect"
	"strings"
)

// Struct fields as plans and schemas see them: which are encoded, and the
// identity each is known by across versions of its type.

// structFields builds the plans of t's encoded fields.
func (pl *planner) structFields(t reflect.Type) ([]structField, error) {
	var fields []structField
	seen := map[string]string{} // identity -> Go field name
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Name == "_" && f.Type.Size() == 0 {
			continue // padding markers such as _ struct{} carry no data
		}
		name, skip, err := fieldIdentity(t, f)
		if err != nil {
			return nil, err
		}
		if skip {
			continue
		}
		if !f.IsExported() {
			// Dropping the field would lose state silently on restore.
			return nil, unsupported(t, "has unexported field "+f.Name+"; export it, or tag it `weir:\"-\"` if it is not state,")
		}
		if other, dup := seen[name]; dup {
			return nil, unsupported(t, fmt.Sprintf("has fields %s and %s with the same identity %q; give one another name in its weir tag,", other, f.Name, name))
		}
		seen[name] = f.Name
		fp, err := pl.build(f.Type)
		if err != nil {
			return nil, err
		}
		fields = append(fields, structField{fieldPlan{off: f.Offset, plan: fp}, name, f.Name})
	}
	return fields, nil
}

// structName is the informational name a struct's schema node carries.
func structName(t reflect.Type) string {
	if t.Name() == "" {
		return ""
	}
	return t.String()
}

// fieldIdentity returns the name a field is known by in schemas: the
// weir tag's value, or else the Go name. `weir:"-"` leaves the field out
// of the encoding (skip): it is not state, and decodes as its zero value.
func fieldIdentity(t reflect.Type, f reflect.StructField) (name string, skip bool, err error) {
	tag, ok := f.Tag.Lookup("weir")
	switch {
	case !ok || tag == "":
		return f.Name, false, nil
	case tag == "-":
		return "", true, nil
	case strings.ContainsAny(tag, ", \t"):
		// Commas are kept free for options; spaces are surely a typo.
		return "", false, unsupported(t, fmt.Sprintf("field %s has weir tag %q; a weir tag is one name (or \"-\"), without options,", f.Name, tag))
	}
	return tag, false, nil
}
