package formats

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestProtobufRoundTrip(t *testing.T) {
	f := Protobuf[structpb.Struct]()
	v, err := structpb.NewStruct(map[string]any{"user": "ada", "count": 3.0, "tags": []any{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	back, err := f.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(back, v) {
		t.Fatalf("decoded %v, want %v", back, v)
	}
}

func TestProtobufErrors(t *testing.T) {
	f := Protobuf[structpb.Struct]()
	if _, err := f.Decode([]byte{0x0a, 0xff, 0xff}); err == nil || !strings.Contains(err.Error(), "*structpb.Struct") || !strings.Contains(err.Error(), "the record starts") {
		t.Errorf("Decode(garbage) = %v, want an error naming the type and the input", err)
	}
	if _, err := f.Encode(nil); err == nil || !strings.Contains(err.Error(), "nil message") {
		t.Errorf("Encode(nil) = %v", err)
	}
}
