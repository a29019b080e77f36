package main

import (
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/weirstream/weir/internal/jobs/demo"
)

// kfakeBroker starts an in-process Kafka broker (kfake) for the test and
// returns its address; it is closed when the test ends.
func kfakeBroker(t *testing.T) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// The demo through the CLI from a Kafka topic to a Kafka topic, with
// injected failures: a read_committed consumer of the output sees exactly
// the failure-free lines. The broker is kfake in this test process.
func TestDemoKafkaToKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary against an in-process Kafka broker")
	}
	addr := kfakeBroker(t)
	const n, k = 60_000, 97
	r := runWeir(t, time.Minute, "tools", "produce-demo-events", "--to", "kafka://"+addr+"/events",
		"--events", fmt.Sprint(n), "--keys", fmt.Sprint(k), "--partitions", "4")
	wantExit(t, r, 0)
	state := t.TempDir()
	r = runWeir(t, 2*time.Minute, "run", "demo", "--source", "kafka://"+addr+"/events", "--sink", "kafka://"+addr+"/lines",
		"--events", fmt.Sprint(n), "--keys", fmt.Sprint(k), "--parallelism", "2", "--checkpoint-interval", "50ms",
		"--state-dir", state, "--inject-failures", "4", "--fault-seed", "11", "--verify", "-q")
	wantExit(t, r, 0)
	wantContains(t, r.stderr, "4 of 4 fired", "verify: committed output equals the failure-free output exactly")
	lines, err := readKafkaLines(t.Context(), endpoint{scheme: "kafka", brokers: []string{addr}, topic: "lines"})
	if err != nil {
		t.Fatal(err)
	}
	if d := demo.Diff(demo.Expected(n, k), lines); d != "" {
		t.Fatal(d)
	}
}

// A demo reading a topic that produce-demo-events filled with another
// --keys fails on the first record, naming --keys, instead of committing
// counts of accounts the producer never meant.
func TestDemoKafkaKeysMismatch(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary against an in-process Kafka broker")
	}
	addr := kfakeBroker(t)
	r := runWeir(t, time.Minute, "tools", "produce-demo-events", "--to", "kafka://"+addr+"/events",
		"--events", "1000", "--keys", "97", "--partitions", "2")
	wantExit(t, r, 0)
	dir := t.TempDir()
	r = runWeir(t, 2*time.Minute, "run", "demo", "--source", "kafka://"+addr+"/events", "--events", "1000", "--keys", "1000",
		"--verify", "--state-dir", dir, "-q")
	wantExit(t, r, 1)
	wantContains(t, r.stderr, "with --keys 1000", "run the demo with the --keys that produce-demo-events used")
	if lines := committed(t, filepath.Join(dir, "out")); len(lines) != 0 {
		t.Errorf("%d lines committed from events of the wrong accounts, first %q", len(lines), lines[0])
	}
}

// The demo into PostgreSQL through the CLI with injected failures: the
// table holds exactly one row per event with the failure-free values.
func TestDemoPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	if c, err := net.DialTimeout("tcp", "127.0.0.1:5432", time.Second); err != nil {
		t.Skipf("PostgreSQL is not reachable on 127.0.0.1:5432 (%v); run .ci/postgres.sh", err)
	} else {
		c.Close()
	}
	table := fmt.Sprintf("weir_cli_demo_%d", time.Now().UnixNano())
	conn := "postgres://postgres@127.0.0.1:5432/test"
	t.Cleanup(func() {
		if c, err := pgx.Connect(t.Context(), conn); err == nil {
			c.Exec(t.Context(), "DROP TABLE IF EXISTS "+pgx.Identifier{table}.Sanitize())
			c.Close(t.Context())
		}
	})
	const n, k = 50_000, 101
	r := runWeir(t, 2*time.Minute, "run", "demo", "--sink", conn+"?table="+table,
		"--events", fmt.Sprint(n), "--keys", fmt.Sprint(k), "--parallelism", "2", "--checkpoint-interval", "50ms",
		"--state-dir", t.TempDir(), "--inject-failures", "4", "--fault-seed", "5", "-q")
	wantExit(t, r, 0)
	lines, err := readPostgresLines(t.Context(), endpoint{scheme: "postgres", conn: conn, table: table})
	if err != nil {
		t.Fatal(err)
	}
	if d := demo.Diff(demo.Expected(n, k), lines); d != "" {
		t.Fatal(d)
	}
}

func TestParseEndpoint(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{in: "kafka://h:9092,h2:9092/t", want: "kafka [h:9092 h2:9092] t"},
		{in: "postgres://u@h:5/db?table=x&sslmode=disable", want: "postgres postgres://u@h:5/db?sslmode=disable x"},
		{in: "file:///tmp/o", want: "file /tmp/o"},
		{in: "kafka://h:9092", err: `--sink "kafka://h:9092": want kafka://HOST:PORT[,HOST:PORT]/TOPIC`},
		{in: "postgres://h/db", err: `--sink "postgres://h/db": name the table with ?table=NAME`},
		{in: "redis://h/x", err: `--sink "redis://h/x": unknown scheme "redis"; want file, kafka, postgres or nats`},
		{in: "nonsense", err: `--sink "nonsense": want file://DIR, kafka://HOST:PORT/TOPIC, postgres://USER@HOST:PORT/DB?table=NAME or nats://HOST:PORT/STREAM`},
	} {
		ep, err := parseEndpoint("--sink", c.in)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%s: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		var got string
		switch ep.scheme {
		case "kafka":
			got = fmt.Sprintf("kafka %v %s", ep.brokers, ep.topic)
		case "postgres":
			got = fmt.Sprintf("postgres %s %s", ep.conn, ep.table)
		default:
			got = fmt.Sprintf("file %s", ep.dir)
		}
		if got != c.want {
			t.Errorf("%s: got %q, want %q", c.in, got, c.want)
		}
	}
}
