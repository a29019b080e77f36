package nats

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/faults"
)

// TestSourceBadRecordsToSideOutput reads a stream of three subjects (one
// split each) where every seventh message does not deserialize, with
// failures injected at every fault point, at parallelism 2: the main
// output is exactly the good messages and the side output exactly the bad
// ones, each once, with stream, subject, sequence, payload and error.
func TestSourceBadRecordsToSideOutput(t *testing.T) {
	const n = 9000
	ts := newServer(t)
	_, js := ts.js(t)
	createStream(t, js, jetstream.StreamConfig{Name: "MIXED", Subjects: []string{"mixed.>"}})
	parse := func(m *Msg) (string, error) {
		if _, err := strconv.Atoi(string(m.Data)); err != nil {
			return "", fmt.Errorf("not a number: %q", m.Data)
		}
		return string(m.Data), nil
	}
	line := func(b weir.BadRecord) string {
		return fmt.Sprintf("%s/%s/%d %s: %s", b.Topic, b.Subject, b.Offset, b.Value, b.Err)
	}
	var wantGood, wantBad []string
	for i := range n {
		subject, v := "mixed."+string(rune('a'+i%3)), strconv.Itoa(i)
		if i%7 == 3 {
			v = "bad-" + v
		}
		ack, err := js.Publish(context.Background(), subject, []byte(v))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parse(&Msg{Data: []byte(v)}); err != nil {
			wantBad = append(wantBad, line(weir.BadRecord{Topic: "MIXED", Subject: subject, Offset: int64(ack.Sequence), Value: []byte(v), Err: err.Error()}))
		} else {
			wantGood = append(wantGood, v)
		}
	}
	slices.Sort(wantGood)
	slices.Sort(wantBad)
	tag := weir.NewOutputTag[weir.BadRecord]("bad-messages")
	j := newJob(t, 2)
	j.plan = onePerAttempt(3, 9, n, faults.AllPoints()...)
	out, bad := filepath.Join(t.TempDir(), "out"), filepath.Join(t.TempDir(), "bad")
	res := j.run(t, func(env *weir.Env) {
		s := weir.FromSource(env, Source(ts.url, "MIXED", parse, WithBounded(), WithSubjects("mixed.a", "mixed.b", "mixed.c"), WithBadRecordsTo(tag))).UID("nats")
		weir.SinkToTransactional(s, file.ExactlyOnce(out, appendString)).UID("files")
		weir.SinkToTransactional(weir.Map(weir.SideOutput(s, tag), line), file.ExactlyOnce(bad, appendString)).UID("bad-files")
	})
	if res.err != nil {
		t.Fatalf("Execute: %v\nlog:\n%s", res.err, res.log)
	}
	if fired := res.inj.Fired(); fired != 3 {
		t.Errorf("%d failures fired, want 3: %v", fired, res.inj.Log())
	}
	if got := readFiles(t, out); !slices.Equal(got, wantGood) {
		t.Fatalf("main output: %d lines, want the %d good messages exactly: %s", len(got), len(wantGood), firstDiff(wantGood, got))
	}
	if got := readFiles(t, bad); !slices.Equal(got, wantBad) {
		t.Fatalf("side output: %d lines, want the %d bad messages exactly: %s", len(got), len(wantBad), firstDiff(wantBad, got))
	}
	t.Logf("%d good and %d bad messages exact, %d restarts (%d from a checkpoint), %v",
		len(wantGood), len(wantBad), res.restarts, strings.Count(res.log.String(), "msg=restoring"), res.elapsed)

	// Nobody reads the side output: the source refuses to open.
	res = newJob(t, 1).run(t, func(env *weir.Env) {
		s := weir.FromSource(env, Source(ts.url, "MIXED", parse, WithBounded(), WithBadRecordsTo(weir.NewOutputTag[weir.BadRecord]("unread")))).UID("nats")
		weir.SinkToTransactional(s, file.ExactlyOnce(filepath.Join(t.TempDir(), "x"), appendString)).UID("files")
	})
	if res.err == nil || !strings.Contains(res.err.Error(), `side output "unread", which the job does not read`) || res.restarts != 0 {
		t.Fatalf("unread side output: err %v after %d restarts, want a refusal naming the side output and no restart", res.err, res.restarts)
	}
}
