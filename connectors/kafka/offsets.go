package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicMetadata returns how many partitions topic has and its topic id
// (zero from brokers older than Kafka 2.8, which do not name topics by id).
func topicMetadata(ctx context.Context, cl *kgo.Client, topic string) (int32, [16]byte, error) {
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, [16]byte{}, fmt.Errorf("metadata of topic %q: %w", topic, err)
	}
	for _, rt := range resp.Topics {
		if rt.Topic == nil || *rt.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			return 0, [16]byte{}, fmt.Errorf("metadata of topic %q: %w (create the topic first)", topic, err)
		}
		return int32(len(rt.Partitions)), rt.TopicID, nil
	}
	return 0, [16]byte{}, fmt.Errorf("metadata of topic %q: the broker did not describe it (create the topic first)", topic)
}

// listOffsets resolves, for each partition, the ListOffsets timestamp ts
// (-2 earliest, -1 latest, else milliseconds) under read_committed
// isolation: "latest" is the last stable offset. A timestamp after the
// last record resolves to the last stable offset.
func listOffsets(ctx context.Context, cl *kgo.Client, topic string, parts []int32, ts int64) (map[int32]int64, error) {
	out := make(map[int32]int64, len(parts))
	if len(parts) == 0 {
		return out, nil
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	req.IsolationLevel = 1 // read_committed
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for _, p := range parts {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = p
		rp.CurrentLeaderEpoch = -1
		rp.Timestamp = ts
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("list offsets of topic %q: %w", topic, err)
	}
	var missing []int32
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("list offsets of topic %q partition %d: %w", topic, p.Partition, err)
			}
			if p.Offset < 0 { // no record at or after the timestamp
				missing = append(missing, p.Partition)
				continue
			}
			out[p.Partition] = p.Offset
		}
	}
	if len(missing) > 0 {
		ends, err := listOffsets(ctx, cl, topic, missing, -1)
		if err != nil {
			return nil, err
		}
		for p, o := range ends {
			out[p] = o
		}
	}
	for _, p := range parts {
		if _, ok := out[p]; !ok {
			return nil, fmt.Errorf("list offsets of topic %q: no answer for partition %d", topic, p)
		}
	}
	return out, nil
}
