package nats

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	natsgo "github.com/nats-io/nats.go"
	"github.com/weirstream/weir"
)

// Spilling: at pre-commit, a transaction holding more than
// WithSpillBytes is written into a transaction blob in the job's
// checkpoint storage (weir.TransactionBlobs) and leaves memory and the
// handle; the handle keeps the blob's reference, and Commit streams the
// messages back from the blob, a batch at a time.
//
// The blob is the transaction's records in order, each as
//
//	uvarint len, subject
//	uvarint number of header keys, per key: uvarint len, key,
//	    uvarint number of values, per value: uvarint len, value
//	uvarint len, data
//
// with keys in sorted order (so a blob's bytes depend on its records
// only).

// writeRecords writes msgs in the blob format.
func writeRecords(w io.Writer, msgs []Record) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var b []byte
	str := func(s []byte) { b = binary.AppendUvarint(b, uint64(len(s))); b = append(b, s...) }
	for i := range msgs {
		r := &msgs[i]
		b = b[:0]
		str([]byte(r.Subject))
		keys := make([]string, 0, len(r.Header))
		for k := range r.Header {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = binary.AppendUvarint(b, uint64(len(keys)))
		for _, k := range keys {
			str([]byte(k))
			b = binary.AppendUvarint(b, uint64(len(r.Header[k])))
			for _, v := range r.Header[k] {
				str([]byte(v))
			}
		}
		str(r.Data)
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// recordReader reads records of the blob format.
type recordReader struct{ r *bufio.Reader }

// maxField bounds one field of a blob, so that damaged bytes cannot make
// the reader allocate without limit (a NATS message is at most 64 MiB).
const maxField = 1 << 30

func (rr recordReader) bytes() ([]byte, error) {
	n, err := binary.ReadUvarint(rr.r)
	if err != nil {
		return nil, err
	}
	if n > maxField {
		return nil, fmt.Errorf("field of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(rr.r, b); err != nil {
		return nil, unexpected(err)
	}
	return b, nil
}

func (rr recordReader) count() (int, error) {
	n, err := binary.ReadUvarint(rr.r)
	if err != nil {
		return 0, unexpected(err)
	}
	if n > maxField {
		return 0, fmt.Errorf("count %d", n)
	}
	return int(n), nil
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// next reads one record; io.EOF at a record boundary ends the blob.
func (rr recordReader) next() (Record, error) {
	subject, err := rr.bytes()
	if err != nil {
		return Record{}, err // io.EOF here: the end
	}
	var r Record
	r.Subject = string(subject)
	nk, err := rr.count()
	if err != nil {
		return Record{}, err
	}
	if nk > 0 {
		r.Header = make(map[string][]string, nk)
	}
	for range nk {
		k, err := rr.bytes()
		if err != nil {
			return Record{}, unexpected(err)
		}
		nv, err := rr.count()
		if err != nil {
			return Record{}, err
		}
		vs := make([]string, 0, nv)
		for range nv {
			v, err := rr.bytes()
			if err != nil {
				return Record{}, unexpected(err)
			}
			vs = append(vs, string(v))
		}
		r.Header[string(k)] = vs
	}
	if r.Data, err = rr.bytes(); err != nil {
		return Record{}, unexpected(err)
	}
	return r, nil
}

// spill writes txn's messages into a blob and drops them from memory.
func (s *eoSink[T]) spill(ctx context.Context, txn *Txn) error {
	ref, err := s.blobs.Create(ctx, func(w io.Writer) error { return writeRecords(w, txn.Msgs) })
	if errors.Is(err, weir.ErrNoBlobStorage) {
		// No storage for blobs (a WEAKLY_CONSISTENT job): the messages
		// stay in the handle, within WithMaxBufferedBytes.
		if !s.noSpill {
			s.noSpill = true
			s.log.Info("nats sink: the job has no checkpoint storage for transaction blobs; large checkpoints stay in memory and in the checkpoint", "sink", s.uid, "err", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("nats sink %q: spill %s to checkpoint storage: %w", s.uid, txn, err)
	}
	s.buffered -= txn.Bytes
	s.spilled++
	txn.Blob, txn.Msgs = string(ref), nil
	return nil
}

// commitBlob publishes a spilled transaction's messages, read back from
// its blob a batch at a time, with the ids they would have had inline.
// The blob's size and checksum are checked as it is read: a damaged blob
// fails the commit (after the batches before the damage were published,
// which the retry repeats under the same ids).
func (s *eoSink[T]) commitBlob(ctx context.Context, txn *Txn) error {
	f, err := s.blobs.Open(ctx, weir.BlobRef(txn.Blob))
	if err != nil {
		return fmt.Errorf("nats sink %q: commit %s: %w", s.uid, txn, err)
	}
	defer f.Close()
	rr := recordReader{r: bufio.NewReaderSize(f, 64<<10)}
	batch := make([]*natsgo.Msg, 0, s.o.batchSize)
	i := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := s.pub.publish(ctx, batch)
		batch = batch[:0]
		return err
	}
	for {
		r, err := rr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("nats sink %q: commit %s: read blob %s: %w", s.uid, txn, txn.Blob, err)
		}
		batch = append(batch, txn.msg(i, r))
		i++
		if len(batch) == s.o.batchSize {
			if err := flush(); err != nil {
				return fmt.Errorf("nats sink %q: commit %s: %w", s.uid, txn, err)
			}
		}
	}
	if i != txn.Count {
		return fmt.Errorf("nats sink %q: commit %s: blob %s holds %d messages", s.uid, txn, txn.Blob, i)
	}
	if err := flush(); err != nil {
		return fmt.Errorf("nats sink %q: commit %s: %w", s.uid, txn, err)
	}
	return nil
}
