package postgrescdc

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
)

// wantSetupErr checks that err is a setup error whose message names
// each of the given parts (the thing and the fix).
func wantSetupErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if !errors.Is(err, ErrSetup) {
		t.Fatalf("error %v: want one wrapping ErrSetup", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not say %q", err, p)
		}
	}
}

func TestSetupChecks(t *testing.T) {
	dsn, name := newDB(t)
	db := connect(t, dsn)
	ctx := context.Background()
	exec(t, db, "CREATE TABLE keyed (id int PRIMARY KEY, v text)")
	exec(t, db, "CREATE TABLE nokey (v text)")
	exec(t, db, "CREATE TABLE nothing (id int PRIMARY KEY)")
	exec(t, db, "ALTER TABLE nothing REPLICA IDENTITY NOTHING")
	exec(t, db, "CREATE TABLE numkey (id numeric PRIMARY KEY)")

	t.Run("wal_level and privilege", func(t *testing.T) {
		if err := checkServer(ctx, db); err != nil {
			t.Fatalf("the test server (wal_level logical, superuser): %v", err)
		}
		role := "norepl_" + name
		exec(t, db, "CREATE ROLE "+role+" LOGIN")
		t.Cleanup(func() { db.Exec(context.Background(), "DROP ROLE IF EXISTS "+role) })
		u, _ := url.Parse(dsn)
		u.User = url.User(role)
		c := connect(t, u.String())
		wantSetupErr(t, checkServer(ctx, c), role, "REPLICATION privilege", "ALTER ROLE")
	})
	t.Run("replica identity", func(t *testing.T) {
		_, err := loadTables(ctx, db, []string{"keyed", "nokey"})
		wantSetupErr(t, err, "public.nokey", "no primary key", "REPLICA IDENTITY DEFAULT", "ADD PRIMARY KEY")
		_, err = loadTables(ctx, db, []string{"nothing"})
		wantSetupErr(t, err, "public.nothing", "REPLICA IDENTITY NOTHING", "REPLICA IDENTITY DEFAULT")
		_, err = loadTables(ctx, db, []string{"missing"})
		wantSetupErr(t, err, "public.missing", "does not exist")
		_, err = loadTables(ctx, db, []string{"numkey"})
		wantSetupErr(t, err, "public.numkey", "numeric", "integer", "uuid")
		ts, err := loadTables(ctx, db, []string{"keyed"})
		if err != nil || len(ts) != 1 || ts[0].keys[0] != "id" {
			t.Fatalf("keyed: %v %v", ts, err)
		}
	})
	t.Run("publication", func(t *testing.T) {
		ts, _ := loadTables(ctx, db, []string{"keyed"})
		wantSetupErr(t, ensurePublication(ctx, db, "nopub", ts, false), `publication "nopub" does not exist`, "CREATE PUBLICATION", "WithCreatePublication")
		exec(t, db, "CREATE PUBLICATION other FOR TABLE nothing")
		wantSetupErr(t, ensurePublication(ctx, db, "other", ts, false), "does not publish table public.keyed", "ALTER PUBLICATION")
		if err := ensurePublication(ctx, db, "made", ts, true); err != nil {
			t.Fatal(err)
		}
		if err := ensurePublication(ctx, db, "made", ts, false); err != nil {
			t.Fatalf("the created publication: %v", err)
		}
	})
	t.Run("slot in use", func(t *testing.T) {
		slot := "inuse_" + name
		cfg, err := pgconn.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg.RuntimeParams["replication"] = "database"
		rc, err := pgconn.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close(ctx)
		if _, err := pglogrepl.CreateReplicationSlot(ctx, rc, slot, "pgoutput", pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication}); err != nil {
			t.Fatal(err)
		}
		if err := pglogrepl.StartReplication(ctx, rc, slot, 0, pglogrepl.StartReplicationOptions{PluginArgs: []string{"proto_version '1'", "publication_names 'made'"}}); err != nil {
			t.Fatal(err)
		}
		_, err = readSlot(ctx, db, slot)
		wantSetupErr(t, err, slot, "in use by server process", "own slot")
	})
}

// TestSlotExistsOnFreshStart: a fresh job refuses a slot it did not
// create, naming the ways out, and drops nothing.
func TestSlotExistsOnFreshStart(t *testing.T) {
	dsn, name := newDB(t)
	db := connect(t, dsn)
	exec(t, db, "CREATE TABLE keyed (id int PRIMARY KEY, v text)")
	slot := "s_" + name
	exec(t, db, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", slot)
	env := newTestEnv(t, true)
	s := Source(dsn, []string{"keyed"}, WithSlot(slot), WithCreateSlot(), WithCreatePublication())
	err := runSource(t, env, s, dsn)
	if err == nil || !strings.Contains(err.Error(), "exists") || !strings.Contains(err.Error(), "pg_drop_replication_slot") {
		t.Fatalf("job error %v: want one saying the slot exists and how to drop it", err)
	}
	var n int
	if err := db.QueryRow(context.Background(), "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&n); err != nil || n != 1 {
		t.Fatalf("slot count %d (%v): the source must not drop a slot it did not create", n, err)
	}
}
