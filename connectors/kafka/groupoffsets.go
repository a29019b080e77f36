package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchCommitted returns the offsets group has committed for the
// partitions of topic (OffsetFetch); a partition without a committed
// offset is absent. The client routes the request to the group's
// coordinator.
func fetchCommitted(ctx context.Context, cl *kgo.Client, group, topic string, parts []int32) (map[int32]int64, error) {
	out := map[int32]int64{}
	if len(parts) == 0 {
		return out, nil
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic = topic
	rt.Partitions = parts
	req.Topics = append(req.Topics, rt)
	req.RequireStable = true // wait out commits in flight in a transaction
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("fetch committed offsets of group %q: %w", group, err)
	}
	// Brokers answering v8+ fill Groups; older ones the top level.
	code, topics := resp.ErrorCode, resp.Topics
	for _, g := range resp.Groups {
		if g.Group != group {
			continue
		}
		code = g.ErrorCode
		topics = topics[:0]
		for _, t := range g.Topics {
			ft := kmsg.NewOffsetFetchResponseTopic()
			ft.Topic = t.Topic
			for _, p := range t.Partitions {
				fp := kmsg.NewOffsetFetchResponseTopicPartition()
				fp.Partition, fp.Offset, fp.ErrorCode = p.Partition, p.Offset, p.ErrorCode
				ft.Partitions = append(ft.Partitions, fp)
			}
			topics = append(topics, ft)
		}
	}
	if err := kerr.ErrorForCode(code); err != nil {
		return nil, fmt.Errorf("fetch committed offsets of group %q: %w", group, err)
	}
	for _, t := range topics {
		if t.Topic != topic {
			continue
		}
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("fetch committed offset of group %q topic %q partition %d: %w", group, topic, p.Partition, err)
			}
			if p.Offset >= 0 { // -1: nothing committed
				out[p.Partition] = p.Offset
			}
		}
	}
	return out, nil
}

// commitToGroup commits offsets (partition → next offset to read) of topic
// to group as a standalone ("simple") commit: generation -1 and no member,
// which brokers accept for a group that no consumer has joined.
func commitToGroup(ctx context.Context, cl *kgo.Client, group, topic string, topicID [16]byte, offsets map[int32]int64) error {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = group
	req.Generation = -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	// Both: versions up to 9 carry the name, 10 and later the id.
	rt.Topic, rt.TopicID = topic, topicID
	for p, off := range offsets {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition = p
		rp.Offset = off
		rp.LeaderEpoch = -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("commit offsets of topic %q to group %q: %w", topic, group, err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("commit offset of topic %q partition %d to group %q: %w (a group that consumers join rejects commits from outside it: give the source a group of its own)", topic, p.Partition, group, err)
			}
		}
	}
	return nil
}
