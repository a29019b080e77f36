package formats

import (
	"errors"
	"fmt"

	gojson "github.com/goccy/go-json"
)

// JSON returns the JSON format of T: encoding/json's rules and struct
// tags (field names, omitempty, "-", string), through goccy/go-json.
func JSON[T any]() Format[T] { return jsonFormat[T]{} }

type jsonFormat[T any] struct{}

func (jsonFormat[T]) Decode(b []byte) (T, error) {
	var v T
	if err := gojson.Unmarshal(b, &v); err != nil {
		var zero T
		return zero, fmt.Errorf("decode JSON into %s%s: %w; the record starts %s", typeName[T](), jsonOffset(err), err, snippet(b))
	}
	return v, nil
}

func (jsonFormat[T]) Encode(v T) ([]byte, error) {
	b, err := gojson.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s as JSON: %w", typeName[T](), err)
	}
	return b, nil
}

// jsonOffset says where decoding stopped, when the error knows.
func jsonOffset(err error) string {
	var syn *gojson.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf(" at byte %d", syn.Offset)
	}
	var typ *gojson.UnmarshalTypeError
	if errors.As(err, &typ) {
		return fmt.Sprintf(" at byte %d", typ.Offset)
	}
	return ""
}
