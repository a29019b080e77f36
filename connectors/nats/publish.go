package nats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/weirstream/weir"
)

// Headers of JetStream's atomic batch publish (nats-server 2.12 and
// later; nats.go 1.56 has no API for it, so the sink speaks the headers).
const (
	hdrBatchID     = "Nats-Batch-Id"
	hdrBatchSeq    = "Nats-Batch-Sequence"
	hdrBatchCommit = "Nats-Batch-Commit"
)

// errDuplicateInBatch is the server's answer to an atomic batch holding a
// message id it stored already (JSAtomicPublishContainsDuplicateMessageErr).
const errDuplicateInBatch = 10201

// The server's answers to a batch larger than its max_batch_size
// (JSAtomicPublishTooLargeBatchErrF) and to a header atomic batches do
// not allow (JSAtomicPublishUnsupportedHeaderBatchErr).
const (
	errBatchTooLarge     = 10199
	errUnsupportedHeader = 10177
)

// ackEvery is how often within an atomic batch the sink waits for the
// server's acknowledgement (an empty reply once the message is staged),
// so that a batch never runs far ahead of the server.
const ackEvery = 256

// publisher publishes a transaction's messages with their ids.
type publisher struct {
	nc      *natsgo.Conn
	js      jetstream.JetStream
	stream  string
	atomic  bool
	batch   int
	timeout time.Duration
}

// publish stores msgs, chunk by chunk of at most p.batch messages: each
// chunk is one atomic batch when the stream allows them, so a chunk is
// stored whole or not at all, and otherwise message by message. Every
// message carries its Nats-Msg-Id, so publishing the same messages again
// stores nothing twice within the duplicate window.
func (p *publisher) publish(ctx context.Context, msgs []*natsgo.Msg) error {
	for len(msgs) > 0 {
		n := min(len(msgs), p.batch)
		var err error
		if p.atomic {
			err = p.atomicBatch(ctx, msgs[:n])
		} else {
			err = p.oneByOne(ctx, msgs[:n])
		}
		if err != nil {
			return err
		}
		msgs = msgs[n:]
	}
	return nil
}

// apiReply is the part of a JetStream publish reply the sink reads.
type apiReply struct {
	Error *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error"`
	Seq   uint64 `json:"seq"`
	Batch string `json:"batch"`
	Count int    `json:"count"`
}

// atomicBatch publishes msgs as one atomic batch under a new batch id (a
// batch id of an attempt that died half way would be abandoned by the
// server, never completed by the retry). A batch refused because it holds
// a stored message id was committed before: under the duplicate window
// rule all its ids are still known, since the batch was stored at once.
func (p *publisher) atomicBatch(ctx context.Context, msgs []*natsgo.Msg) error {
	id := nuid.Next()
	for i, m := range msgs {
		m.Header.Set(hdrBatchID, id)
		m.Header.Set(hdrBatchSeq, strconv.Itoa(i+1))
		last := i == len(msgs)-1
		if last {
			m.Header.Set(hdrBatchCommit, "1")
		}
		if !last && i%ackEvery != 0 {
			if err := p.nc.PublishMsg(m); err != nil {
				return fmt.Errorf("atomic batch to stream %q, message %d of %d: %w", p.stream, i+1, len(msgs), err)
			}
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, p.timeout)
		reply, err := p.nc.RequestMsgWithContext(rctx, m)
		cancel()
		if err != nil {
			return fmt.Errorf("atomic batch to stream %q, message %d of %d: %w", p.stream, i+1, len(msgs), err)
		}
		if len(reply.Data) == 0 {
			continue // staged
		}
		var r apiReply
		if err := json.Unmarshal(reply.Data, &r); err != nil {
			return fmt.Errorf("atomic batch to stream %q: reply %q: %w", p.stream, reply.Data, err)
		}
		if r.Error != nil {
			switch r.Error.ErrCode {
			case errDuplicateInBatch:
				return nil
			case errBatchTooLarge:
				// The same commit would be refused after any restart.
				return weir.Unrecoverable(fmt.Errorf("atomic batch to stream %q: the server refuses batches of %d messages (%s): lower nats.WithBatchSize to the server's max_batch_size (1000 unless its jetstream limits say otherwise)", p.stream, len(msgs), r.Error.Description))
			case errUnsupportedHeader:
				return weir.Unrecoverable(fmt.Errorf("atomic batch to stream %q: %s: the serializer sets a header atomic batches do not allow; drop it, or pass nats.WithoutAtomicBatches", p.stream, r.Error.Description))
			}
			return fmt.Errorf("atomic batch to stream %q, message %d of %d: server error %d: %s", p.stream, i+1, len(msgs), r.Error.ErrCode, r.Error.Description)
		}
		if last && r.Count != len(msgs) {
			return fmt.Errorf("atomic batch to stream %q: the server committed %d messages of %d", p.stream, r.Count, len(msgs))
		}
	}
	return nil
}

// oneByOne publishes msgs asynchronously and waits for every
// acknowledgement: for servers or streams without atomic batches. A crash
// half way leaves part of the messages stored; the retry stores the rest,
// the ids dropping the repeats.
func (p *publisher) oneByOne(ctx context.Context, msgs []*natsgo.Msg) error {
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	for i, m := range msgs {
		f, err := p.js.PublishMsgAsync(m, jetstream.WithMsgID(m.Header.Get(jetstream.MsgIDHeader)))
		if err != nil {
			return fmt.Errorf("publish to stream %q, message %d of %d: %w", p.stream, i+1, len(msgs), err)
		}
		futures = append(futures, f)
	}
	timer := time.NewTimer(p.timeout)
	defer timer.Stop()
	for i, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return fmt.Errorf("publish to stream %q, message %d of %d: %w", p.stream, i+1, len(msgs), err)
		case <-timer.C:
			return fmt.Errorf("publish to stream %q: no acknowledgement of message %d of %d within %v", p.stream, i+1, len(msgs), p.timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

var errNoSubject = errors.New("no subject")
