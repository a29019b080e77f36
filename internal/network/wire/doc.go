// Package wire is the byte format of the remote data plane: the frames one
// TCP connection between two TaskManagers carries, and their payloads. It
// encodes and decodes; it owns no socket, goroutine or buffer pool.
//
// A frame is a big-endian header and a payload:
//
//	 0  u32  length of kind..payload, MinLength ≤ length ≤ MaxLength (64 MiB)
//	 4  u8   kind: Hello, HelloOK, PartitionRequest, Data, Event, AddCredit,
//	         CancelPartition, Error, Prioritize, Release
//	 5  u8   flags: FlagLogPos on Data and Event, else 0
//	 6  u32  channel id, 0 = the connection itself
//	10  u64  sequence number of Data and Event frames within the channel
//	18  …    payload
//
// Hello and HelloOK travel on channel 0 only; PartitionRequest, Data, Event,
// AddCredit, CancelPartition, Prioritize and Release on a channel other
// than 0; Error on either.
// Only Data and Event carry a sequence number, other kinds carry 0. Only
// they may carry a flag: FlagLogPos says the payload starts with a LogPos,
// the buffer's position in a WEAKLY_CONSISTENT producer's in-flight log
// (docs/weak-consistency.md), so their decoders take the header's flags.
// A weak PartitionRequest names the position to replay from, and Release
// (consumer to producer) the position the consumer's completed snapshot
// covers, so the producer can truncate its log. Numbers
// inside payloads are canonical uvarints (an overlong encoding is refused)
// or fixed-width big-endian integers, so an accepted payload re-encodes to
// the same bytes; the fuzz tests hold the decoders to that.
//
// Every defect is an error wrapping ErrMalformed whose *MalformedError
// names the defect, the frame kind and the field; a peer of another
// protocol version gets a *VersionError instead. Decoders never panic and
// never trust a length before checking it against the bytes present.
//
// Writing appends to a []byte (the connection's write buffer); a Data frame
// can be written as its header, then its records straight from the buffer
// that holds them. Reading goes through a Reader, which owns one reusable
// buffer and returns frames whose payload aliases it until the next call:
//
//	buf = wire.AppendHello(buf[:0], wire.Hello, wire.HelloMsg{From: "tm-1", To: "tm-2", BuildID: id})
//	buf = wire.AppendData(buf, ch, seq, wire.DataMsg{Backlog: 2, Records: n, Bytes: encoded})
//	conn.Write(buf)
//
//	rd := wire.NewReader(conn, 0)
//	for {
//		f, err := rd.Next() // io.EOF at a clean close
//		if err != nil {
//			return err
//		}
//		switch f.Kind {
//		case wire.Data:
//			d, err := wire.DecodeData(f.Flags, f.Payload) // d.Bytes valid until Next
//			…
//		case wire.Event:
//			ev, err := wire.DecodeEvent(f.Flags, f.Payload)
//			…
//		}
//	}
//
// The design and the credit protocol that uses these frames are in
// docs/design/cluster.md, section 3. Event payloads start with a fixed
// code: 1 barrier, 2 cancel, 3 end of partition, 4 end of data, 5 and 6
// their priority forms, 7 announcement, 8 watermark (i64 milliseconds),
// 9 watermark status (one byte, 1 idle, 0 active).
//
// Owns: the frame format of the data plane and its version. Must not touch:
// connections (internal/network/remote reads and writes the frames)
// (checked by internal/archtest).
package wire
