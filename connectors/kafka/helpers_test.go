package kafka

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// broker is a Kafka cluster for one test: an in-process kfake cluster, or
// the real one named by WEIR_KAFKA_BROKERS.
type broker struct {
	addrs []string
	real  bool
}

// newBroker starts a kfake cluster (closed at the end of the test) unless
// WEIR_KAFKA_BROKERS names a real one.
func newBroker(t testing.TB) *broker {
	t.Helper()
	if env := os.Getenv("WEIR_KAFKA_BROKERS"); env != "" {
		return &broker{addrs: strings.Split(env, ","), real: true}
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return &broker{addrs: c.ListenAddrs()}
}

// client returns a plain client closed at the end of the test.
func (b *broker) client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.addrs...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// topic creates a topic with a name unique to the test.
func (b *broker) topic(t testing.TB, partitions int32) string {
	t.Helper()
	name := fmt.Sprintf("weir-%s-%d", strings.NewReplacer("/", "-", " ", "_").Replace(t.Name()), time.Now().UnixNano())
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = name
	rt.NumPartitions = partitions
	rt.ReplicationFactor = 1
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 10_000
	resp, err := req.RequestWith(context.Background(), b.client(t))
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	return name
}

// offsets lists the latest offset of every partition under the isolation
// level: the high watermark (read_uncommitted) or the last stable offset
// (read_committed).
func (b *broker) offsets(t testing.TB, topic string, committed bool) []int64 {
	t.Helper()
	out, err := listEnds(context.Background(), b.client(t), topic, committed)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// listEnds is offsets for any goroutine: the end offset of every
// partition of topic, or an error.
func listEnds(ctx context.Context, cl *kgo.Client, topic string, committed bool) ([]int64, error) {
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	md.Topics = append(md.Topics, mt)
	mresp, err := md.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	if len(mresp.Topics) == 0 {
		return nil, fmt.Errorf("metadata of %s: no topic in the answer", topic)
	}
	if err := kerr.ErrorForCode(mresp.Topics[0].ErrorCode); err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	n := len(mresp.Topics[0].Partitions)
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	if committed {
		req.IsolationLevel = 1
	}
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := range n {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = int32(p)
		rp.CurrentLeaderEpoch = -1
		rp.Timestamp = -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("list offsets of %s: %w", topic, err)
	}
	out := make([]int64, n)
	for _, p := range resp.Topics[0].Partitions {
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return nil, fmt.Errorf("list offsets of %s partition %d: %w", topic, p.Partition, err)
		}
		out[p.Partition] = p.Offset
	}
	return out, nil
}

// readCommitted requires that no transaction is open on topic (every
// partition's last stable offset equals its high watermark) and returns the
// values a read_committed consumer sees, in partition then offset order.
func (b *broker) readCommitted(t testing.TB, topic string) []string {
	t.Helper()
	// A real broker writes commit markers after EndTxn has answered (the
	// coordinator records the commit, then tells the partition leaders), so
	// right after the job ends a committed transaction may still hold the
	// last stable offset back for a moment. Wait for the markers, bounded;
	// a transaction left open never settles and fails here. The last
	// stable offset is read before the high watermark: both only grow and
	// LSO <= HWM at any instant, so lso(t1) == hwm(t2) with t1 < t2 means
	// the two were equal at t1.
	var hwm, lso []int64
	for deadline := time.Now().Add(30 * time.Second); ; {
		lso = b.offsets(t, topic, true)
		hwm = b.offsets(t, topic, false)
		if slices.Equal(hwm, lso) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic %s has open transactions 30s after the job ended: high watermarks %v, last stable offsets %v", topic, hwm, lso)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return b.readTo(t, topic, hwm, false)
}

// readStable returns what a read_committed consumer sees on topic now,
// open transactions or not: the values below every partition's last
// stable offset. Records of aborted transactions are never delivered, so
// a partition whose last decided records were aborted would not reach
// its stable offset by the records seen; reading ends there once the
// consumer has been idle for two seconds.
func (b *broker) readStable(t testing.TB, topic string) []string {
	t.Helper()
	return b.readTo(t, topic, b.offsets(t, topic, true), true)
}

// readTo reads topic read_committed up to ends, in partition then offset
// order; idleEnds lets an idle consumer end the reading early (see
// readStable).
func (b *broker) readTo(t testing.TB, topic string, ends []int64, idleEnds bool) []string {
	t.Helper()
	cl := b.client(t,
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
	)
	next := make([]int64, len(ends))
	byPart := make([][]string, len(ends))
	done := func() bool {
		for p := range ends {
			if next[p] < ends[p] {
				return false
			}
		}
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for !done() {
		pctx, pcancel := ctx, context.CancelFunc(func() {})
		if idleEnds {
			pctx, pcancel = context.WithTimeout(ctx, 2*time.Second)
		}
		fs := cl.PollFetches(pctx)
		pcancel()
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %s: positions %v, want %v: %v", topic, next, ends, err)
		}
		if idleEnds && pctx.Err() != nil && fs.NumRecords() == 0 {
			break
		}
		for _, fe := range fs.Errors() {
			if idleEnds && errors.Is(fe.Err, context.DeadlineExceeded) {
				continue // the idle poll's own deadline
			}
			t.Fatalf("read %s partition %d: %v", topic, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= ends[r.Partition] {
				return // past the end asked for (readStable's offsets were read earlier)
			}
			next[r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() {
				byPart[r.Partition] = append(byPart[r.Partition], string(r.Value))
			}
		})
	}
	var out []string
	for _, vs := range byPart {
		out = append(out, vs...)
	}
	return out
}

// openTransactions lists the transactional ids the broker reports as
// Ongoing (kfake and Kafka both answer ListTransactions).
func (b *broker) openTransactions(t testing.TB) []string {
	t.Helper()
	req := kmsg.NewPtrListTransactionsRequest()
	req.StateFilters = []string{"Ongoing"}
	resp, err := req.RequestWith(context.Background(), b.client(t))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ts := range resp.TransactionStates {
		ids = append(ids, ts.TransactionalID)
	}
	slices.Sort(ids)
	return ids
}
