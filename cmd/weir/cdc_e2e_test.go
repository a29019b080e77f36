package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weirstream/weir/connectors/file"
)

// cdcServer is the PostgreSQL the cdc tests use (.ci/postgres.sh sets it
// up with wal_level = logical and prepared transactions).
const cdcServer = "postgres://postgres@127.0.0.1:5432"

// cdcDatabase creates a throwaway database and returns its URL; it is
// dropped with its slots at the end, and its prepared transactions are
// always rolled back (one left behind blocks every slot creation on the
// server).
func cdcDatabase(t *testing.T, name string) string {
	t.Helper()
	admin, err := pgx.Connect(t.Context(), cdcServer+"/test?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(t.Context(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(t.Context(), "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	u := cdcServer + "/" + name + "?sslmode=disable"
	t.Cleanup(func() {
		ctx := context.Background()
		if c, err := pgx.Connect(ctx, u); err == nil {
			if rows, err := c.Query(ctx, "SELECT gid FROM pg_prepared_xacts WHERE database = current_database()"); err == nil {
				gids, _ := pgx.CollectRows(rows, pgx.RowTo[string])
				for _, g := range gids {
					c.Exec(ctx, "ROLLBACK PREPARED '"+strings.ReplaceAll(g, "'", "''")+"'")
				}
			}
			c.Close(ctx)
		}
		if t.Failed() {
			t.Logf("left database %s for inspection", name)
			return
		}
		if c, err := pgx.Connect(ctx, cdcServer+"/test?sslmode=disable"); err == nil {
			// A killed reader's slot stays active until its walsender
			// exits; a database with a slot cannot be dropped.
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				c.Exec(ctx, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = $1 AND NOT active", name)
				var left int
				if c.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots WHERE database = $1", name).Scan(&left) != nil || left == 0 {
					break
				}
			}
			c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(ctx)
		}
	})
	return u
}

// cdcSetup skips the test without the CI's PostgreSQL, else creates a
// source and a replica database named after prefix and a unique id, runs
// sql in the source, and returns the id, both URLs and a connection to
// the source (closed when the test ends).
func cdcSetup(t *testing.T, prefix string, sql ...string) (id, src, dst string, db *pgx.Conn) {
	t.Helper()
	if c, err := net.DialTimeout("tcp", "127.0.0.1:5432", time.Second); err != nil {
		t.Skipf("PostgreSQL is not reachable on 127.0.0.1:5432 (%v); run .ci/postgres.sh", err)
	} else {
		c.Close()
	}
	id = fmt.Sprintf("%d_%d", os.Getpid(), time.Now().UnixNano()%1_000_000)
	src = cdcDatabase(t, prefix+"_src_"+id)
	dst = cdcDatabase(t, prefix+"_dst_"+id)
	db, err := pgx.Connect(t.Context(), src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	for _, q := range sql {
		if _, err := db.Exec(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return id, src, dst, db
}

// cdcWriter changes the captured tables until ctx ends: inserts,
// updates, deletes and key changes in transactions of one to four
// statements.
// It returns the transactions it committed, and the error of its
// connection when it could not connect.
func cdcWriter(ctx context.Context, dsn string, seed uint64) (int, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, fmt.Errorf("writer: %w", err)
	}
	defer conn.Close(context.Background())
	rng := rand.New(rand.NewPCG(seed, 1))
	next := int64(10_000_000)
	n := 0
	for ctx.Err() == nil {
		tx, err := conn.Begin(ctx)
		if err != nil {
			break
		}
		for j := 0; j < 1+rng.IntN(4); j++ {
			id := 1 + rng.Int64N(40_000)
			var err error
			switch rng.IntN(6) {
			case 0, 1:
				next++
				_, err = tx.Exec(ctx, "INSERT INTO accounts VALUES ($1, $2, 'new')", next, rng.IntN(1000))
			case 2:
				_, err = tx.Exec(ctx, "UPDATE accounts SET balance = balance + 1, note = note || '+' WHERE id = $1", id)
			case 3:
				_, err = tx.Exec(ctx, "DELETE FROM accounts WHERE id = $1", id)
			case 4:
				next++
				_, err = tx.Exec(ctx, "UPDATE accounts SET id = $2 WHERE id = $1", id, next)
			case 5:
				_, err = tx.Exec(ctx, "INSERT INTO notes VALUES ($1, 1) ON CONFLICT (tag) DO UPDATE SET n = notes.n + 1", fmt.Sprint("tag", rng.IntN(500)))
			}
			if err != nil {
				break
			}
		}
		if tx.Commit(ctx) == nil {
			n++
		}
		time.Sleep(2 * time.Millisecond)
	}
	return n, nil
}

// TestCDCKillRestart: weir run cdc is SIGKILLed at random moments (in the
// snapshot and in the log) while a writer changes the source tables, and
// started again with the same command each time, resuming from its
// checkpoints; after the writer stopped, a last run ends on
// --idle-timeout and --verify finds the replica equal to the source row
// for row.
func TestCDCKillRestart(t *testing.T) {
	// A run killed before its first checkpoint completed leaves a slot no
	// checkpoint knows; the next run drops it by its record
	// (TestCDCKilledBeforeFirstCheckpoint).
	cdcKillRestart(t, cdcKillRun{name: "cdce2e", chunkRows: "1000", writerSeed: 11, killSeed: 7, resumed: resumeRE,
		what: "an unfinished snapshot from its checkpointed chunks, the others the log"})
}

// TestCDCParallelSnapshotKillRestart: TestCDCKillRestart with the
// snapshot read by 2 and 3 readers (--parallelism), alternating from
// run to run, so that most restores change the readers' parallelism.
func TestCDCParallelSnapshotKillRestart(t *testing.T) {
	cdcKillRestart(t, cdcKillRun{name: "cdcpar", chunkRows: "500", writerSeed: 13, killSeed: 9, resumed: parallelResumeRE,
		what:    "an unfinished parallel snapshot with ranges assigned, the others the log or a fresh start",
		readers: func(k int) int { return 2 + k%2 }, lastReaders: 3})
}

// cdcKillRun is one kill-and-restart scenario of weir run cdc.
type cdcKillRun struct {
	name                 string
	chunkRows            string
	writerSeed, killSeed uint64
	// resumed matches a run's log line that resumed a snapshot, with the
	// progress it resumed at (0: none).
	resumed *regexp.Regexp
	what    string // what a resumed run resumed, for the log
	// readers, if set, gives run k's --parallelism; lastReaders the
	// verifying run's.
	readers     func(k int) int
	lastReaders int
}

// cdcKillRestart SIGKILLs weir run cdc 5 times at random moments while a
// writer changes two source tables, then runs it to its idle end with
// --verify: the replica must equal the source row for row.
func cdcKillRestart(t *testing.T, sc cdcKillRun) {
	if testing.Short() {
		t.Skip("needs PostgreSQL; kills and restarts weir for several seconds")
	}
	id, src, dst, db := cdcSetup(t, sc.name,
		"CREATE TABLE accounts (id bigint PRIMARY KEY, balance int, note text)",
		"INSERT INTO accounts SELECT i, i % 1000, 'n' || i FROM generate_series(1, 40000) i",
		"CREATE TABLE notes (tag text PRIMARY KEY, n int)",
		"INSERT INTO notes SELECT 'tag' || i, 0 FROM generate_series(1, 300) i")
	slot := sc.name + "_" + id
	t.Cleanup(func() {
		if !t.Failed() {
			db.Exec(context.Background(), "SELECT pg_drop_replication_slot($1) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active", slot)
		}
	})
	args := []string{"run", "cdc", "--source", src, "--tables", "accounts,notes", "--sink", dst, "--slot", slot,
		"--chunk-rows", sc.chunkRows, "--idle-timeout", "2s", "--checkpoint-interval", "100ms",
		"--state-dir", t.TempDir(), "-v"}
	withReaders := func(args []string, n int) []string {
		if n == 0 {
			return args
		}
		return append(slices.Clone(args), "--parallelism", fmt.Sprint(n))
	}

	wctx, stopWriter := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var wrote int
	wg.Add(1)
	go func() {
		defer wg.Done()
		var err error
		if wrote, err = cdcWriter(wctx, src, sc.writerSeed); err != nil {
			t.Error(err)
		}
	}()
	rng := killRand(t, sc.killSeed)
	const kills = 5
	resumed := 0
	for k := range kills {
		readers := 0
		if sc.readers != nil {
			readers = sc.readers(k)
		}
		r := startWeir(t, 2*time.Minute, withReaders(args, readers)...)
		delay := 50*time.Millisecond + time.Duration(rng.Int64N(int64(900*time.Millisecond)))
		select {
		case <-r.done:
		case <-time.After(delay):
		}
		if !r.kill() {
			res := r.wait()
			t.Fatalf("run %d ended by itself (exit %d) while the writer still wrote; stderr:\n%s", k, res.code, tail(res.stderr, 3000))
		}
		t.Logf("run %d (readers %d): SIGKILL after %s", k, readers, delay)
		if m := sc.resumed.FindStringSubmatch(r.stderr()); m != nil && m[1] != "0" {
			resumed++
		}
	}
	stopWriter()
	wg.Wait()
	t.Logf("%d of %d runs resumed %s", resumed, kills, sc.what)
	t.Logf("the writer committed %d transactions", wrote)
	res := runWeir(t, 2*time.Minute, append(withReaders(args, sc.lastReaders), "--verify")...)
	wantExit(t, res, 0)
	var rows int64
	if err := db.QueryRow(t.Context(), "SELECT (SELECT count(*) FROM accounts) + (SELECT count(*) FROM notes)").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	wantLine(t, res.stdout, fmt.Sprintf("verify: replica equals source exactly (%d rows in 2 tables)", rows))
}

var parallelResumeRE = regexp.MustCompile(`resuming the snapshot.*"ranges assigned"=(\d+)`)

var resumeRE = regexp.MustCompile(`resuming the snapshot.*"chunks read"=(\d+)`)

// TestCDCUsageErrors: bad flag combinations are usage errors (exit 2)
// that name the flag and the fix, before anything connects.
func TestCDCUsageErrors(t *testing.T) {
	src := "postgres://u@127.0.0.1:1/shop"
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tables", "t", "--sink", dir}, "--source is required"},
		{[]string{"--source", "mysql://h/db", "--tables", "t", "--sink", dir}, "want postgres://USER@HOST:PORT/DB"},
		{[]string{"--source", src, "--sink", dir}, "--tables is required"},
		{[]string{"--source", src, "--tables", "t"}, "--sink is required"},
		{[]string{"--source", src, "--tables", "t", "--sink", src}, "--sink names the --source database"},
		{[]string{"--source", src, "--tables", "t", "--sink", "mysql://h:3306/x"}, "want postgres://USER@HOST:PORT/DB, kafka://HOST:PORT/TOPIC or a folder"},
		{[]string{"--source", src, "--tables", "t", "--sink", "kafka://h:9092"}, "want kafka://HOST:PORT[,HOST:PORT]/TOPIC"},
		{[]string{"--source", src, "--tables", "t", "--sink", dir, "--verify", "--idle-timeout", "1s"}, "--verify has no effect with a folder or kafka:// --sink"},
		{[]string{"--source", src, "--tables", "t", "--sink", "postgres://u@127.0.0.1:1/replica", "--verify"}, "--verify has no effect without --idle-timeout"},
		{[]string{"--source", src + "?table=t", "--tables", "t", "--sink", dir}, "not ?table="},
	} {
		r := runWeir(t, time.Minute, append([]string{"run", "cdc", "--state-dir", filepath.Join(dir, "state")}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("weir run cdc %s: exit %d, stderr %q; want exit 2 saying %q", strings.Join(tc.args, " "), r.code, r.stderr, tc.want)
		}
	}
}

// checkChangeEvents checks Debezium change events of table items (2000
// rows, then 10 updated, 10 deleted, 1 inserted): no event twice, and
// every row read or inserted once.
func checkChangeEvents(t *testing.T, lines []string) {
	t.Helper()
	ops := map[string]int{}
	seen := map[string]int{}
	for _, l := range lines {
		var ev struct {
			Op     string         `json:"op"`
			Before map[string]any `json:"before"`
			After  map[string]any `json:"after"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("not a change event: %s", l)
		}
		ops[ev.Op]++
		row := ev.After
		if row == nil {
			row = ev.Before
		}
		seen[fmt.Sprint(ev.Op, row["id"], row["v"])]++
	}
	for k, n := range seen {
		if n > 1 {
			t.Errorf("event %s appears %d times", k, n)
		}
	}
	// The updates and deletes may have reached the snapshot instead of
	// the log, depending on when the chunks were read; every row is read
	// once, and every change not read is in the log.
	if got := ops["r"] + ops["c"] - ops["d"]; got != 1991 {
		t.Errorf("events %v: reads + inserts - deletes = %d, want the 1991 rows of the table", ops, got)
	}
}

// TestCDCFiles: --sink DIR writes one Debezium change event per line,
// exactly once with injected failures.
func TestCDCFiles(t *testing.T) {
	out := t.TempDir()
	runCDCChanges(t, "cdcfiles", out)
	lines, err := file.ReadCommitted(out)
	if err != nil {
		t.Fatal(err)
	}
	checkChangeEvents(t, lines)
}

// runCDCChanges runs cdc on table items into sink with injected
// failures while a few changes are made, to its idle end.
func runCDCChanges(t *testing.T, prefix, sink string) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	if c, err := net.DialTimeout("tcp", "127.0.0.1:5432", time.Second); err != nil {
		t.Skipf("PostgreSQL is not reachable (%v); run .ci/postgres.sh", err)
	} else {
		c.Close()
	}
	id := fmt.Sprintf("%d_%d", os.Getpid(), time.Now().UnixNano()%1_000_000)
	src := cdcDatabase(t, prefix+"_"+id)
	db, err := pgx.Connect(t.Context(), src)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	if _, err := db.Exec(t.Context(), "CREATE TABLE items (id int PRIMARY KEY, v text); INSERT INTO items SELECT i, 'v' || i FROM generate_series(1, 2000) i"); err != nil {
		t.Fatal(err)
	}
	slot := prefix + "_" + id
	t.Cleanup(func() {
		db.Exec(context.Background(), "SELECT pg_drop_replication_slot($1) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active", slot)
	})
	r := startWeir(t, 2*time.Minute, "run", "cdc", "--source", src, "--tables", "items", "--sink", sink,
		"--slot", slot, "--idle-timeout", "3s", "--checkpoint-interval", "100ms", "--chunk-rows", "300", "--state-dir", t.TempDir(),
		"--inject-failures", "3", "--fault-seed", "9", "-v")
	r.waitCompleted(t, 2)
	for _, sql := range []string{"UPDATE items SET v = 'changed' WHERE id <= 10", "DELETE FROM items WHERE id > 1990", "INSERT INTO items VALUES (5000, 'new')"} {
		if _, err := db.Exec(t.Context(), sql); err != nil {
			t.Fatal(err)
		}
	}
	wantExit(t, r.wait(), 0)
}

// TestCDCKafka: --sink kafka://… writes one Debezium change event per
// snapshot row and change, exactly once with injected failures.
func TestCDCKafka(t *testing.T) {
	if c, err := net.DialTimeout("tcp", "127.0.0.1:9092", time.Second); err != nil {
		t.Skipf("Kafka is not reachable on 127.0.0.1:9092 (%v); run .ci/kafka.sh", err)
	} else {
		c.Close()
	}
	topic := fmt.Sprintf("weir-cdc-%d-%d", os.Getpid(), time.Now().UnixNano()%1_000_000)
	runCDCChanges(t, "cdckafka", "kafka://127.0.0.1:9092/"+topic)
	lines, err := readKafkaLines(t.Context(), endpoint{scheme: "kafka", brokers: []string{"127.0.0.1:9092"}, topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	checkChangeEvents(t, lines)
}

// TestCDCKilledBeforeFirstCheckpoint: a run killed after it created its
// replication slot and before any checkpoint completed leaves a slot no
// checkpoint knows. The next run of the same command starts afresh,
// finds the slot its predecessor recorded in the state folder, drops it
// and snapshots anew, instead of refusing the slot; a slot without that
// record is still refused.
func TestCDCKilledBeforeFirstCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	id, src, dst, db := cdcSetup(t, "cdcfirst",
		"CREATE TABLE accounts (id bigint PRIMARY KEY, balance int, note text)",
		"INSERT INTO accounts SELECT i, i % 1000, 'n' || i FROM generate_series(1, 20000) i")
	slot := "cdcfirst_" + id
	t.Cleanup(func() {
		db.Exec(context.Background(), "SELECT pg_drop_replication_slot($1) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active", slot)
	})
	stateDir := t.TempDir()
	args := func(interval string, more ...string) []string {
		return append([]string{"run", "cdc", "--source", src, "--tables", "accounts", "--sink", dst, "--slot", slot,
			"--chunk-rows", "1000", "--idle-timeout", "2s", "--checkpoint-interval", interval, "--state-dir", stateDir, "-v"}, more...)
	}
	// No periodic checkpoint in the first run: it is killed once the
	// slot exists.
	r := startWeir(t, time.Minute, args("1h")...)
	created := false
	for l := range r.lines {
		if strings.Contains(l, "created replication slot") {
			created = true
			break
		}
	}
	if !created {
		t.Fatalf("the first run ended before it created its slot:\n%s", tail(r.stderr(), 3000))
	}
	r.kill()
	if completedRE.MatchString(r.stderr()) {
		t.Fatalf("a checkpoint completed in the first run, which the test needs not to")
	}
	res := runWeir(t, 2*time.Minute, args("100ms", "--verify")...)
	wantExit(t, res, 0)
	wantLine(t, res.stdout, "verify: replica equals source exactly (20000 rows in 1 tables)")
	if !strings.Contains(res.stderr, "dropping the slot an earlier run of this job created") {
		t.Errorf("the second run did not say it dropped its predecessor's slot; stderr:\n%s", tail(res.stderr, 3000))
	}

	// Another job (another state folder) meeting the slot refuses it.
	other := runWeir(t, time.Minute, "run", "cdc", "--source", src, "--tables", "accounts", "--sink", dst, "--slot", slot,
		"--state-dir", t.TempDir(), "--idle-timeout", "1s")
	if other.code == 0 || !strings.Contains(other.stderr, "exists, and a fresh start needs a slot created with its snapshot") {
		t.Errorf("a job without the slot's record: exit %d, want a refusal of the existing slot; stderr:\n%s", other.code, tail(other.stderr, 2000))
	}

	// A run killed while the server created its slot (or before it
	// learned the slot's start) left only the intent record: the slot is
	// still its own, and nothing can have confirmed on it.
	slot2, state2 := slot+"_b", t.TempDir()
	t.Cleanup(func() {
		db.Exec(context.Background(), "SELECT pg_drop_replication_slot($1) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active", slot2)
	})
	if err := os.MkdirAll(filepath.Join(state2, "cdc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state2, "cdc", "cdc-slot-"+slot2+".json"), []byte(`{"slot":"`+slot2+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(t.Context(), "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", slot2); err != nil {
		t.Fatal(err)
	}
	res = runWeir(t, 2*time.Minute, "run", "cdc", "--source", src, "--tables", "accounts", "--sink", t.TempDir(), "--slot", slot2,
		"--chunk-rows", "1000", "--idle-timeout", "1s", "--checkpoint-interval", "100ms", "--state-dir", state2, "-v")
	wantExit(t, res, 0)
	if !strings.Contains(res.stderr, "dropping the slot an earlier run of this job created") {
		t.Errorf("a slot named by an intent record was not taken back; stderr:\n%s", tail(res.stderr, 3000))
	}
}
