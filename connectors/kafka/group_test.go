package kafka

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
)

// topicID returns the id of topic.
func (b *broker) topicID(t *testing.T, topic string) [16]byte {
	t.Helper()
	_, id, err := topicMetadata(context.Background(), b.client(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestSourceStartsAtCommitted commits offsets for two of three partitions
// to a group; a fresh bounded job started at Committed(group, Earliest)
// reads exactly the records after them, and all of the third partition.
func TestSourceStartsAtCommitted(t *testing.T) {
	b := newBroker(t)
	topic := b.topic(t, 3)
	b.produceTo(t, topic, []int32{0, 1, 2}, 0, 100)
	const group = "payments-monitor"
	if err := commitToGroup(context.Background(), b.client(t), group, topic, b.topicID(t, topic), map[int32]int64{0: 30, 1: 75}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for p, from := range []int{30, 75, 0} {
		for i := from; i < 100; i++ {
			want = append(want, fmt.Sprintf("%d-%d", p, i))
		}
	}
	out := filepath.Join(t.TempDir(), "out")
	res := newJob(t, 2).run(t, func(env *weir.Env) {
		s := weir.FromSource(env, Source(b.addrs, topic, stringValue, WithBounded(), WithStartOffset(Committed(group, Earliest())))).UID("kafka")
		weir.SinkToTransactional(s, file.ExactlyOnce(out, appendString)).UID("files")
	})
	if res.err != nil {
		t.Fatalf("job: %v\nlog:\n%s", res.err, res.log)
	}
	if got := readFiles(t, out); !slices.Equal(got, sorted(want)) {
		t.Fatalf("read %d records, want the %d after the committed offsets (%s)", len(got), len(want), firstDiff(sorted(want), got))
	}
}

// TestSourceCommitsToGroup runs a bounded job at parallelism 2 over a
// 3-partition topic written in transactions, committing to a group: after
// the run, the group's offsets are each partition's end (markers
// included), those of the final checkpoint.
func TestSourceCommitsToGroup(t *testing.T) {
	b := newBroker(t)
	topic := b.topic(t, 3)
	fillTopic(t, b, topic, 3000)
	const group = "weir-job-progress"
	out := filepath.Join(t.TempDir(), "out")
	res := newJob(t, 2).run(t, func(env *weir.Env) {
		s := weir.FromSource(env, Source(b.addrs, topic, stringValue, WithBounded(), WithCommitOffsetsToGroup(group))).UID("kafka")
		weir.SinkToTransactional(s, file.ExactlyOnce(out, appendString)).UID("files")
	})
	if res.err != nil {
		t.Fatalf("job: %v\nlog:\n%s", res.err, res.log)
	}
	got, err := fetchCommitted(context.Background(), b.client(t), group, topic, []int32{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	ends := b.offsets(t, topic, false)
	want := map[int32]int64{0: ends[0], 1: ends[1], 2: ends[2]}
	if !maps.Equal(got, want) {
		t.Fatalf("group offsets %v, want the partitions' ends %v", got, want)
	}
}
