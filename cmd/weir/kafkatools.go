package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/internal/jobs/demo"
)

// readKafkaLines reads every committed record value of ep's topic with a
// read_committed consumer, until the topic has been quiet for a second.
func readKafkaLines(ctx context.Context, ep endpoint) ([]string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(ep.brokers...), kgo.ConsumeTopics(ep.topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ep.topic, err)
	}
	defer cl.Close()
	var lines []string
	// The first fetch also finds the partitions' leaders, which on a
	// loaded machine can take longer than a second: an empty poll ends
	// the read only once records came, or after 10 s without any (an
	// empty topic).
	start := time.Now()
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			lines = append(lines, string(r.Value))
			n++
		})
		for _, e := range fs.Errors() {
			if !errors.Is(e.Err, context.DeadlineExceeded) {
				return nil, fmt.Errorf("read %s partition %d: %w", e.Topic, e.Partition, e.Err)
			}
		}
		if n == 0 && (len(lines) > 0 || time.Since(start) > 10*time.Second || ctx.Err() != nil) {
			return lines, ctx.Err()
		}
	}
}

func newToolsCmd() *cobra.Command {
	tools := &cobra.Command{Use: "tools", Short: "Helpers for trying the built-in jobs"}
	var (
		to         string
		events     int64
		keys       int64
		partitions int32
	)
	produce := &cobra.Command{
		Use:   "produce-demo-events",
		Short: "Write the demo's events to a Kafka topic or NATS stream, for `weir run demo --source kafka://…` (or nats://…)",
		Long: `produce-demo-events creates the topic (if absent) with --partitions
partitions and writes one record per event i = 0 … N-1: value i (decimal),
key the account, partition account mod partitions, so that each account's
events sit in one partition in index order, as the demo's exactly-once
specification needs. With --to nats://HOST:PORT/STREAM it creates the
JetStream stream (if absent; file storage, the stream's name as its
subject) and publishes payload i with header Weir-Account, in index
order; --partitions does not apply.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ep, err := parseEndpoint("--to", to)
			if err != nil {
				return err
			}
			if ep.scheme != "kafka" && ep.scheme != "nats" {
				return usagef("--to must be kafka://HOST:PORT/TOPIC or nats://HOST:PORT/STREAM")
			}
			if events < 1 || keys < 1 || partitions < 1 {
				return usagef("--events, --keys and --partitions must be at least 1")
			}
			if ep.scheme == "nats" {
				return produceNatsDemoEvents(c.Context(), ep, events, keys)
			}
			return produceDemoEvents(c.Context(), ep, events, keys, partitions)
		},
	}
	produce.Flags().StringVar(&to, "to", "", "kafka://HOST:PORT/TOPIC or nats://HOST:PORT/STREAM")
	produce.Flags().Int64Var(&events, "events", 1_000_000, "number of events")
	produce.Flags().Int64Var(&keys, "keys", 1000, "number of accounts K (the demo's --keys must match)")
	produce.Flags().Int32Var(&partitions, "partitions", 4, "partitions of the topic if it is created")
	tools.AddCommand(produce, newCertsCmd(), newNexmarkEventsCmd())
	return tools
}

func produceDemoEvents(ctx context.Context, ep endpoint, n, k int64, partitions int32) error {
	if ctx == nil {
		ctx = context.Background()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(ep.brokers...), kgo.DefaultProduceTopic(ep.topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := ensureTopic(ctx, cl, ep, partitions); err != nil {
		return err
	}
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(ep.topic)
	meta.Topics = append(meta.Topics, mt)
	mresp, err := meta.RequestWith(ctx, cl)
	if err != nil || len(mresp.Topics) != 1 || len(mresp.Topics[0].Partitions) == 0 {
		return fmt.Errorf("topic %s: no partitions found (%v)", ep.topic, err)
	}
	parts := int64(len(mresp.Topics[0].Partitions))
	var first atomic.Pointer[error]
	for i := int64(0); i < n && first.Load() == nil; i++ {
		a := demo.Account(i, k)
		r := &kgo.Record{Key: strconv.AppendInt(nil, a, 10), Value: strconv.AppendInt(nil, i, 10), Partition: int32(a % parts)}
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				first.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if p := first.Load(); p != nil {
		return fmt.Errorf("produce to %s: %w", ep.topic, *p)
	}
	fmt.Printf("wrote %d demo events to %s (%d partitions, by account)\n", n, ep.topic, parts)
	return nil
}

// ensureTopic creates ep's topic with the given partitions if it is absent.
func ensureTopic(ctx context.Context, cl *kgo.Client, ep endpoint, partitions int32) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = ep.topic, partitions, 1
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("create topic %s on %v: %w; is the broker reachable?", ep.topic, ep.brokers, err)
	}
	if len(resp.Topics) == 1 {
		if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create topic %s: %w", ep.topic, err)
		}
	}
	return nil
}

// demoEnsureTopic creates the demo's output topic if it does not exist.
func demoEnsureTopic(ctx context.Context, ep endpoint, partitions int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(ep.brokers...))
	if err != nil {
		return err
	}
	defer cl.Close()
	return ensureTopic(ctx, cl, ep, partitions)
}
