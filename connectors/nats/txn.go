package nats

import (
	"fmt"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Txn is the handle of one exactly-once sink transaction: the messages a
// sink subtask received between two checkpoint barriers, and the prefix
// of their Nats-Msg-Id headers. The two-phase-commit operator keeps it in
// the checkpoint, so the messages of a completed checkpoint survive any
// crash until they are published, and are published again with the same
// ids by any later attempt (the server drops the repeats within the
// stream's duplicate window).
type Txn struct {
	// ID is "<job>/<operator uid>/<subtask>/<run>-<n>": run is random per
	// opening of the sink and n counts its transactions, so no two
	// transactions ever share an id, while a restored handle keeps its own.
	ID string
	// Msgs are the transaction's messages in order; message i is published
	// with Nats-Msg-Id "<ID>/<i>". Emptied once committed.
	Msgs []Record
	// Bytes counts the subjects, headers and payloads of Msgs.
	Bytes int64
	// Count is len(Msgs) before the commit emptied it.
	Count int
	// Committed is set once every message is stored in the stream.
	Committed bool
	// Blob is set when the messages were spilled at pre-commit to a
	// transaction blob in checkpoint storage (weir.BlobRef): Msgs is then
	// empty, and Commit reads them from the blob. Empty in handles of
	// builds before spilling.
	Blob string

	aborted bool `weir:"-"` // its bytes no longer count as buffered
}

// Record is one message of a transaction.
type Record struct {
	Subject string
	Header  map[string][]string
	Data    []byte
}

// String names the transaction in messages.
func (t *Txn) String() string {
	if t == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s(%d messages, %d bytes)", t.ID, t.Count, t.Bytes)
}

// inMemory reports whether the transaction's messages count as held in
// memory: neither finished nor spilled.
func (t *Txn) inMemory() bool {
	return t != nil && !t.Committed && !t.aborted && t.Blob == ""
}

// msg is message i, r, as published: a copy of r's header with the
// message's id.
func (t *Txn) msg(i int, r Record) *natsgo.Msg {
	h := natsgo.Header{}
	for k, vs := range r.Header {
		h[k] = append([]string(nil), vs...)
	}
	h.Set(jetstream.MsgIDHeader, t.msgID(i))
	return &natsgo.Msg{Subject: r.Subject, Header: h, Data: r.Data}
}

// msgID is the Nats-Msg-Id of message i.
func (t *Txn) msgID(i int) string { return fmt.Sprintf("%s/%d", t.ID, i) }

// size is what r adds to a transaction's Bytes.
func (r *Record) size() int64 {
	n := len(r.Subject) + len(r.Data)
	for k, vs := range r.Header {
		n += len(k)
		for _, v := range vs {
			n += len(v)
		}
	}
	return int64(n)
}
