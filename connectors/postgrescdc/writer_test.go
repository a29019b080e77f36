package postgrescdc

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// capturedTables are the tables the exactness tests capture: an integer
// key, a text key (whose C-collation order differs from the database's
// default), a composite key, a text key in collation C, and a composite
// key of a timestamptz and a uuid.
var capturedTables = []string{"items", "tags", "pairs", "codes", "events"}

// createTables creates and fills the captured tables.
func createTables(t testing.TB, db *pgx.Conn, items int) {
	t.Helper()
	exec(t, db, "CREATE TABLE items (id bigint PRIMARY KEY, v int NOT NULL, s text)")
	exec(t, db, "CREATE TABLE tags (k text PRIMARY KEY, n int)")
	exec(t, db, "CREATE TABLE pairs (a int, b int, v int, PRIMARY KEY (a, b))")
	// A text key in collation C: its chunks use the index, no COLLATE.
	exec(t, db, `CREATE TABLE codes (code text COLLATE "C" PRIMARY KEY, n int)`)
	exec(t, db, "INSERT INTO codes SELECT md5(i::text), i FROM generate_series(1, 300) i")
	exec(t, db, "INSERT INTO items SELECT i, i % 97, 'row ' || i FROM generate_series(1, $1) i", items)
	exec(t, db, "INSERT INTO tags SELECT k, length(k) FROM (SELECT unnest(ARRAY['alpha', 'Zeta', 'äpfel', 'éclair', 'Ωmega', 'zz', 'a b']) UNION SELECT 'tag' || i FROM generate_series(1, 300) i) x(k)")
	exec(t, db, "INSERT INTO pairs SELECT a, b, a * b FROM generate_series(1, 20) a, generate_series(1, 20) b")
	// 50 instants shared by several uuids each: chunks split inside an
	// instant, so the uuid's byte order decides too.
	exec(t, db, "CREATE TABLE events (at timestamptz, id uuid, v int, PRIMARY KEY (at, id))")
	exec(t, db, "INSERT INTO events SELECT "+eventKey("i")+", 0 FROM generate_series(1, 300) i")
}

// eventKey is the key columns of event number n (an SQL expression).
func eventKey(n string) string {
	return "timestamptz '2026-01-01 00:00:00.000001+00' + (" + n + " % 50) * interval '1 hour 1 microsecond', md5(" + n + "::text)::uuid"
}

// startWriter runs writer on a goroutine until ctx ends or its n
// transactions are done; wait waits for it and returns how many
// committed.
func startWriter(ctx context.Context, t testing.TB, dsn string, seed int64, n int, pause time.Duration) (wait func() int) {
	done := make(chan int, 1)
	go func() { done <- writer(ctx, t, dsn, seed, n, pause) }()
	return func() int { return <-done }
}

// writer changes the captured tables in transactions of one to five
// statements on distinct keys until ctx ends or n transactions are done;
// it returns how many committed.
func writer(ctx context.Context, t testing.TB, dsn string, seed int64, n int, pause time.Duration) int {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Errorf("writer: %v", err)
		return 0
	}
	defer conn.Close(context.Background())
	rng := rand.New(rand.NewSource(seed))
	nextID := int64(1_000_000)
	done := 0
	for i := 0; i < n && ctx.Err() == nil; i++ {
		tx, err := conn.Begin(ctx)
		if err != nil {
			break
		}
		used := map[string]bool{}
		ok := true
		for j := 0; j < 1+rng.Intn(5) && ok; j++ {
			var sql string
			var args []any
			switch op := rng.Intn(10); {
			case op < 2:
				nextID++
				sql, args = "INSERT INTO items VALUES ($1, $2, $3)", []any{nextID, rng.Intn(1000), fmt.Sprintf("new %d", nextID)}
			case op < 4:
				id := int64(1 + rng.Intn(2500))
				if used[fmt.Sprint("i", id)] {
					continue
				}
				used[fmt.Sprint("i", id)] = true
				sql, args = "UPDATE items SET v = v + 1, s = s || '+' WHERE id = $1", []any{id}
			case op < 5:
				id := int64(1 + rng.Intn(2500))
				if used[fmt.Sprint("i", id)] {
					continue
				}
				used[fmt.Sprint("i", id)] = true
				sql, args = "DELETE FROM items WHERE id = $1", []any{id}
			case op < 6:
				// A new primary key: a delete and an insert in the changelog.
				id := int64(1 + rng.Intn(2500))
				nextID++
				if used[fmt.Sprint("i", id)] {
					continue
				}
				used[fmt.Sprint("i", id)] = true
				sql, args = "UPDATE items SET id = $2 WHERE id = $1", []any{id, nextID}
			case op < 8:
				k := fmt.Sprintf("tag%d", 1+rng.Intn(400))
				if used[k] {
					continue
				}
				used[k] = true
				sql, args = "INSERT INTO tags VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET n = tags.n + 1", []any{k, rng.Intn(100)}
			case op < 9:
				k := fmt.Sprintf("tag%d", 1+rng.Intn(400))
				if used[k] {
					continue
				}
				used[k] = true
				sql, args = "DELETE FROM tags WHERE k = $1", []any{k}
			case op < 10 && rng.Intn(2) == 0:
				k := fmt.Sprintf("%x", rng.Int63())
				if used[k] {
					continue
				}
				used[k] = true
				sql, args = "INSERT INTO codes VALUES ($1, 1) ON CONFLICT (code) DO UPDATE SET n = codes.n + 1", []any{k}
			case rng.Intn(3) == 0:
				i := 1 + rng.Intn(600)
				if used[fmt.Sprint("e", i)] {
					continue
				}
				used[fmt.Sprint("e", i)] = true
				key := eventKey("$1::int")
				if rng.Intn(3) == 0 {
					sql = "DELETE FROM events WHERE (at, id) = (SELECT " + key + ")"
				} else {
					sql = "INSERT INTO events SELECT " + key + ", 1 ON CONFLICT (at, id) DO UPDATE SET v = events.v + 1"
				}
				args = []any{i}
			default:
				a, b := 1+rng.Intn(25), 1+rng.Intn(20)
				k := fmt.Sprint("p", a, "/", b)
				if used[k] {
					continue
				}
				used[k] = true
				sql, args = "INSERT INTO pairs VALUES ($1, $2, 0) ON CONFLICT (a, b) DO UPDATE SET v = pairs.v + 1", []any{a, b}
			}
			if _, err := tx.Exec(ctx, sql, args...); err != nil {
				ok = false
				if ctx.Err() == nil {
					t.Errorf("writer: %s: %v", sql, err)
				}
			}
		}
		if !ok {
			tx.Rollback(context.Background())
			break
		}
		if err := tx.Commit(ctx); err != nil {
			break
		}
		done++
		if pause > 0 {
			time.Sleep(pause)
		}
	}
	return done
}
