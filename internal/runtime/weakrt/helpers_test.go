package weakrt

import "github.com/weirstream/weir/internal/codec"

// testSchema is the encoded schema of T, as a codec's Schema returns it
// (the runtime's tests have the same helper).
func testSchema[T any]() []byte {
	s, err := codec.SchemaFor[T]()
	if err != nil {
		panic(err)
	}
	return codec.AppendSchema(nil, s)
}
