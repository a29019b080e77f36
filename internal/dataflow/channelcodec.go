package dataflow

// ChannelCodec encodes and decodes the record batches of one edge. Unaligned
// checkpoints store the batches a barrier overtook as channel state with it;
// the producing node supplies it because the runtime does not know record
// types. Implementations are safe for use by one goroutine at a time.
type ChannelCodec interface {
	// AppendBatch appends data (a *network.Batch[T] of the edge's record
	// type) to dst: the record count as a uvarint, then the records.
	AppendBatch(dst []byte, data any) []byte
	// DecodeBatch decodes one batch from the front of src into a batch of
	// the codec's own pool and returns it as gate data, with the number of
	// bytes consumed. Malformed bytes give an error wrapping
	// codec.ErrCorrupt.
	DecodeBatch(src []byte) (data any, n int, err error)
	// Records returns the number of records in data, a batch of this
	// codec's type.
	Records(data any) int
	// KeepKeyGroups removes from data, a batch DecodeBatch returned, the
	// records (and their timestamps) whose key group keep refuses, and
	// returns the batch (data itself, compacted in place, for pooled
	// batches) and how many records are left. keyHash is the hash edge's func(T)
	// uint32 and maxParallelism the producer's; the key group is the one
	// the producer's hash partitioner routed the record by. A restore at
	// another parallelism uses it to hand each subtask the in-flight
	// records of its own key groups.
	KeepKeyGroups(data any, keyHash any, maxParallelism int, keep func(kg int) bool) (any, int, error)
	// Schema returns the encoded schema of the record type
	// (codec.AppendSchema): an unaligned checkpoint records it beside
	// the in-flight records it holds (a "channel" row of the state table).
	Schema() []byte
}
