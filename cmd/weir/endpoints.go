package main

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/connectors/kafka"
	"github.com/weirstream/weir/internal/jobs/demo"
)

// endpoint is a parsed --source or --sink URL.
type endpoint struct {
	scheme  string   // file, kafka, postgres, nats
	brokers []string // kafka
	topic   string   // kafka
	dir     string   // file
	conn    string   // postgres connection string without the table parameter
	table   string   // postgres
	natsURL string   // nats: nats://HOST:PORT
	stream  string   // nats
}

// String names the endpoint in messages.
func (e endpoint) String() string {
	switch e.scheme {
	case "kafka":
		return fmt.Sprintf("kafka topic %s", e.topic)
	case "postgres":
		return fmt.Sprintf("postgres table %s", e.table)
	case "nats":
		return fmt.Sprintf("nats stream %s", e.stream)
	}
	return e.dir
}

// parseEndpoint reads file://DIR, kafka://HOST:PORT[,HOST:PORT]/TOPIC,
// postgres://…?table=NAME and nats://HOST:PORT/STREAM. Errors name the flag and the expected form.
func parseEndpoint(flag, raw string) (endpoint, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return endpoint{}, usagef("%s %q: want file://DIR, kafka://HOST:PORT/TOPIC, postgres://USER@HOST:PORT/DB?table=NAME or nats://HOST:PORT/STREAM", flag, raw)
	}
	switch u.Scheme {
	case "file":
		dir := u.Host + u.Path
		if dir == "" {
			return endpoint{}, usagef("%s %q: no folder; want file://DIR", flag, raw)
		}
		return endpoint{scheme: "file", dir: dir}, nil
	case "kafka":
		topic := strings.TrimPrefix(u.Path, "/")
		if u.Host == "" || topic == "" || strings.Contains(topic, "/") {
			return endpoint{}, usagef("%s %q: want kafka://HOST:PORT[,HOST:PORT]/TOPIC", flag, raw)
		}
		return endpoint{scheme: "kafka", brokers: strings.Split(u.Host, ","), topic: topic}, nil
	case "nats":
		stream := strings.TrimPrefix(u.Path, "/")
		if u.Host == "" || stream == "" || strings.ContainsAny(stream, "/.*> ") {
			return endpoint{}, usagef("%s %q: want nats://HOST:PORT/STREAM (a stream name without dots, slashes or wildcards)", flag, raw)
		}
		return endpoint{scheme: "nats", natsURL: "nats://" + u.Host, stream: stream}, nil
	case "postgres", "postgresql":
		q := u.Query()
		table := q.Get("table")
		if table == "" {
			return endpoint{}, usagef("%s %q: name the table with ?table=NAME", flag, raw)
		}
		q.Del("table")
		u.RawQuery = q.Encode()
		return endpoint{scheme: "postgres", conn: u.String(), table: table}, nil
	}
	return endpoint{}, usagef("%s %q: unknown scheme %q; want file, kafka, postgres or nats", flag, raw, u.Scheme)
}

// demoKafkaEvents reads the demo's events from a topic whose record values
// are event indexes (see `weir tools produce-demo-events`): the record
// carries only i, and account and amount follow from it and --keys. The
// producer's key is the account it computed with its own --keys: a record
// whose key differs fails the job naming --keys, since with another K the
// accounts, and so the counts and totals, would be wrong and an account's
// events spread over partitions (out of order) without a word.
func demoKafkaEvents(env *weir.Env, ep endpoint, keys int64, bounded bool) weir.Stream[demo.Event] {
	gen := demo.Generator(keys)
	decode := func(r *kgo.Record) (demo.Event, error) {
		i, err := strconv.ParseInt(string(r.Value), 10, 64)
		if err != nil || i < 0 {
			return demo.Event{}, fmt.Errorf("record value %q is not an event index", r.Value)
		}
		e := gen(i)
		if r.Key != nil {
			if a, err := strconv.ParseInt(string(r.Key), 10, 64); err == nil && a != e.Account {
				return demo.Event{}, fmt.Errorf("event %d has account %d in the topic but %d with --keys %d: run the demo with the --keys that produce-demo-events used", i, a, e.Account, keys)
			}
		}
		return e, nil
	}
	opts := []kafka.Option{kafka.WithStartOffset(kafka.Earliest())}
	if bounded {
		opts = append(opts, kafka.WithBounded())
	}
	return weir.FromSource(env, kafka.Source(ep.brokers, ep.topic, decode, opts...)).Name("events").UID("events")
}

// demoSink adds the demo's exactly-once sink for ep.
func demoSink(results weir.Stream[demo.Result], ep endpoint, cp checkpointTimes) error {
	switch ep.scheme {
	case "file":
		weir.SinkToTransactional(results, file.ExactlyOnce(ep.dir, demo.Result.AppendLine)).Name("files").UID("files")
	case "kafka":
		encode := func(r demo.Result, rec *kgo.Record) error {
			rec.Key = strconv.AppendInt(rec.Key[:0], r.Account, 10)
			rec.Value = r.AppendLine(rec.Value[:0])
			return nil
		}
		weir.SinkToTransactional(results, kafka.ExactlyOnce(ep.brokers, ep.topic, encode,
			kafka.WithTransactionalIDPrefix("weir-demo"),
			kafka.WithCheckpointing(cp.interval, cp.timeout, cp.maxRestartDelay))).Name("kafka").UID("kafka")
	case "postgres":
		return addPostgresSink(results, ep)
	case "nats":
		natsDemoSink(results, ep, cp)
	}
	return nil
}

// checkpointTimes tells the Kafka sink what its transaction timeout must
// outlast, and the NATS sink what its stream's duplicate window must.
type checkpointTimes struct {
	interval, timeout, maxRestartDelay time.Duration
}

// readCommitted returns the lines the demo committed at ep.
func readCommitted(ctx context.Context, ep endpoint) ([]string, error) {
	switch ep.scheme {
	case "kafka":
		return readKafkaLines(ctx, ep)
	case "postgres":
		return readPostgresLines(ctx, ep)
	case "nats":
		return readNatsLines(ctx, ep)
	}
	return file.ReadCommitted(ep.dir)
}
