package formats

import (
	"fmt"

	"google.golang.org/protobuf/proto"
)

// Message is a generated Protobuf message type M whose pointer *M is the
// proto.Message.
type Message[M any] interface {
	*M
	proto.Message
}

// Protobuf returns the Protobuf format of the generated message type M,
// whose values are *M: formats.Protobuf[pb.Event]() decodes into
// *pb.Event. Unknown fields are kept, so a newer writer's fields survive
// a pass through an older job.
func Protobuf[M any, P Message[M]]() Format[P] { return protoFormat[M, P]{} }

type protoFormat[M any, P Message[M]] struct{}

func (protoFormat[M, P]) Decode(b []byte) (P, error) {
	m := P(new(M))
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("decode Protobuf into %s: %w; the record starts %s", typeName[P](), err, snippet(b))
	}
	return m, nil
}

func (protoFormat[M, P]) Encode(v P) ([]byte, error) {
	if v == nil {
		return nil, fmt.Errorf("encode %s as Protobuf: nil message", typeName[P]())
	}
	b, err := proto.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s as Protobuf: %w", typeName[P](), err)
	}
	return b, nil
}
