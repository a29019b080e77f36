package nats

import (
	"fmt"
	"time"

	natsgo "github.com/nats-io/nats.go"
)

// Msg is a stream message as the source's deserializer sees it. The
// deserializer must not keep Data or Header: they may be reused.
type Msg struct {
	Stream   string
	Subject  string
	Sequence uint64    // the stream sequence
	Time     time.Time // when the server stored the message
	Header   natsgo.Header
	Data     []byte
}

// where names the message in errors.
func (m *Msg) where() string {
	return fmt.Sprintf("stream %q subject %q sequence %d", m.Stream, m.Subject, m.Sequence)
}
