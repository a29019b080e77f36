package codec

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// A release's state type and the next one's, differing by every rule at
// once: fields added, dropped, moved and renamed by tag; integers and a
// float widened; a pointer added and two removed; all of it nested in a
// struct, a slice, an array and a map.

type PropInnerOld struct {
	X int8
	Y string
	Z *float32
}

type PropInnerNew struct {
	Z float64 // *float32 -> float64: nil reads as 0
	W string  // added
	X int64
	// Y dropped
}

type PropOld struct {
	A    int16
	B    float32
	C    string
	D    []int32
	E    *uint8
	F    map[string]float32
	G    PropInnerOld
	H    [2]int8
	Gone []PropInnerOld
	I    int32
	L    []PropInnerOld
}

type PropNew struct {
	I       *int64
	Renamed float64 `weir:"B"`
	H       [2]int64
	L       []PropInnerNew
	G       PropInnerNew
	F       map[string]float64
	E       uint64
	D       []int64
	A       int32
	New     string
	C       string
}

// TestResolvePropertyRandom encodes random PropOld values, decodes them
// through Resolve as PropNew, and checks every field of the result against
// the old value's field of the same identity (or the zero value, for a
// field the old type did not have).
func TestResolvePropertyRandom(t *testing.T) {
	c, err := For[PropOld]()
	if err != nil {
		t.Fatal(err)
	}
	d, compat, err := Resolve[PropNew](schemaOf[PropOld](t))
	if err != nil || compat != CompatibleAfterMigration {
		t.Fatalf("Resolve: %v, %v", compat, err)
	}
	rng := rand.New(rand.NewPCG(29, 1))
	for i := range 3000 {
		var old PropOld
		fill(reflect.ValueOf(&old).Elem(), rng, 0)
		enc := c.Append(nil, old)
		got, n, err := d.Decode(enc)
		if err != nil || n != len(enc) {
			t.Fatalf("value %d %+v: decoded %d of %d bytes: %v", i, old, n, len(enc), err)
		}
		if err := sameByIdentity(reflect.ValueOf(old), reflect.ValueOf(got), "PropNew"); err != nil {
			t.Fatalf("value %d: %v\nold %+v\nnew %+v", i, err, old, got)
		}
	}
}

// fill sets v to a random value: nil and empty containers included.
func fill(v reflect.Value, rng *rand.Rand, depth int) {
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		v.SetInt(int64(rng.Uint64()) >> (64 - v.Type().Bits() + rng.IntN(v.Type().Bits())))
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
		v.SetUint(rng.Uint64() >> (64 - v.Type().Bits() + rng.IntN(v.Type().Bits())))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(float32(rng.NormFloat64() * 1e3)))
	case reflect.String:
		v.SetString(fmt.Sprint(rng.IntN(1000)))
	case reflect.Pointer:
		if rng.IntN(3) > 0 {
			p := reflect.New(v.Type().Elem())
			fill(p.Elem(), rng, depth+1)
			v.Set(p)
		}
	case reflect.Slice:
		if rng.IntN(4) == 0 || depth > 3 {
			return // nil
		}
		n := rng.IntN(4)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(s.Index(i), rng, depth+1)
		}
		v.Set(s)
	case reflect.Map:
		if rng.IntN(4) == 0 || depth > 3 {
			return
		}
		m := reflect.MakeMap(v.Type())
		for range rng.IntN(4) {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(k, rng, depth+1)
			fill(e, rng, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), rng, depth+1)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), rng, depth+1)
			}
		}
	}
}

// sameByIdentity checks that nv holds what ov held, as the evolution rules
// say: struct fields matched by identity (absent ones zero), numbers equal
// after widening, a nil pointer read as the zero value.
func sameByIdentity(ov, nv reflect.Value, path string) error {
	if ov.Kind() == reflect.Pointer && nv.Kind() != reflect.Pointer {
		if ov.IsNil() {
			if !nv.IsZero() {
				return fmt.Errorf("%s: nil became %v, want the zero value", path, nv)
			}
			return nil
		}
		return sameByIdentity(ov.Elem(), nv, path)
	}
	if nv.Kind() == reflect.Pointer && ov.Kind() != reflect.Pointer {
		if nv.IsNil() {
			return fmt.Errorf("%s: %v became nil", path, ov)
		}
		return sameByIdentity(ov, nv.Elem(), path)
	}
	switch ov.Kind() {
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		if ov.Int() != nv.Int() {
			return fmt.Errorf("%s: %d became %d", path, ov.Int(), nv.Int())
		}
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
		if ov.Uint() != nv.Uint() {
			return fmt.Errorf("%s: %d became %d", path, ov.Uint(), nv.Uint())
		}
	case reflect.Float32, reflect.Float64:
		if ov.Float() != nv.Float() {
			return fmt.Errorf("%s: %v became %v", path, ov.Float(), nv.Float())
		}
	case reflect.String, reflect.Bool:
		if ov.Interface() != nv.Interface() {
			return fmt.Errorf("%s: %v became %v", path, ov, nv)
		}
	case reflect.Pointer:
		if ov.IsNil() != nv.IsNil() {
			return fmt.Errorf("%s: nil-ness changed", path)
		}
		if !ov.IsNil() {
			return sameByIdentity(ov.Elem(), nv.Elem(), path)
		}
	case reflect.Slice, reflect.Array:
		if ov.Kind() == reflect.Slice && ov.IsNil() != nv.IsNil() || ov.Len() != nv.Len() {
			return fmt.Errorf("%s: length or nil-ness changed: %v became %v", path, ov, nv)
		}
		for i := range ov.Len() {
			if err := sameByIdentity(ov.Index(i), nv.Index(i), path+"[]"); err != nil {
				return err
			}
		}
	case reflect.Map:
		if ov.IsNil() != nv.IsNil() || ov.Len() != nv.Len() {
			return fmt.Errorf("%s: size or nil-ness changed", path)
		}
		for it := ov.MapRange(); it.Next(); {
			e := nv.MapIndex(it.Key()) // string keys: the same in both
			if !e.IsValid() {
				return fmt.Errorf("%s: key %v lost", path, it.Key())
			}
			if err := sameByIdentity(it.Value(), e, path+"[]"); err != nil {
				return err
			}
		}
	case reflect.Struct:
		old := map[string]reflect.Value{}
		for i := range ov.NumField() {
			name, _, _ := fieldIdentity(ov.Type(), ov.Type().Field(i))
			old[name] = ov.Field(i)
		}
		for i := range nv.NumField() {
			f := nv.Type().Field(i)
			name, _, _ := fieldIdentity(nv.Type(), f)
			o, ok := old[name]
			if !ok {
				if !nv.Field(i).IsZero() {
					return fmt.Errorf("%s.%s: added field is %v, want the zero value", path, f.Name, nv.Field(i))
				}
				continue
			}
			if err := sameByIdentity(o, nv.Field(i), path+"."+f.Name); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%s: kind %s not compared", path, ov.Kind())
	}
	return nil
}
