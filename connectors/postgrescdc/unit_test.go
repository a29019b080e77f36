package postgrescdc

import (
	"testing"
)

func TestSnapshotVisibility(t *testing.T) {
	s, err := parseSnapshot("100:110:102,105")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		xid  uint32
		want bool
	}{
		{50, true},   // below xmin: committed before
		{99, true},   // below xmin
		{100, true},  // at xmin, not in progress: committed before
		{102, false}, // in progress
		{105, false}, // in progress
		{104, true},
		{110, false}, // at xmax: started after
		{200, false},
	} {
		if got := s.visible(tc.xid); got != tc.want {
			t.Errorf("xid %d visible %v, want %v", tc.xid, got, tc.want)
		}
	}
	// Across a wraparound of the 32-bit xid: the snapshot's 64-bit ids are
	// in epoch 1, the log's 32-bit ids wrap.
	w, err := parseSnapshot("4294967290:4294967300:4294967295")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		xid  uint32
		want bool
	}{
		{4294967280, true},  // epoch 0, below xmin
		{4294967295, false}, // in progress
		{2, true},           // 4294967298 in 64 bits: between, not in progress
		{4, false},          // 4294967300: at xmax
	} {
		if got := w.visible(tc.xid); got != tc.want {
			t.Errorf("wrapped xid %d visible %v, want %v", tc.xid, got, tc.want)
		}
	}
	for _, bad := range []string{"", "1:2", "a:2:", "1:b:", "1:2:x"} {
		if _, err := parseSnapshot(bad); err == nil {
			t.Errorf("parseSnapshot(%q): no error", bad)
		}
	}
}

func TestChunkLookup(t *testing.T) {
	tbl := tableInfo{schema: "public", name: "t", keys: []string{"a", "b"}, kinds: []keyKind{kindInt, kindText}}
	k := func(a int64, b string) []keyVal { return []keyVal{{I: a}, {S: b}} }
	p := &tableProgress{Chunks: []chunkState{{Upper: k(1, "m"), Rows: 1}, {Upper: k(5, "B"), Rows: 2}, {Upper: nil, Rows: 3}}}
	for _, tc := range []struct {
		key  []keyVal
		rows int64
	}{
		{k(0, "zzz"), 1},
		{k(1, "m"), 1}, // an upper bound is in its chunk
		{k(1, "n"), 2},
		{k(5, "A"), 2}, // "A" < "B" in byte order
		{k(5, "B"), 2},
		{k(5, "a"), 3}, // "a" > "B" in byte order (not in most collations)
		{k(99, ""), 3},
	} {
		c := chunkOf(tbl, p, tc.key)
		if c == nil || c.Rows != tc.rows {
			t.Errorf("key %v: chunk %+v, want the one with %d rows", tc.key, c, tc.rows)
		}
	}
	open := &tableProgress{Chunks: []chunkState{{Upper: k(1, "m")}}}
	if c := chunkOf(tbl, open, k(2, "")); c != nil {
		t.Errorf("a key above the chunks read: %+v, want none", c)
	}
}

func TestChunkQuery(t *testing.T) {
	tbl := tableInfo{schema: "s", name: "t", keys: []string{"id", "name"}, kinds: []keyKind{kindInt, kindText}}
	sql, args := chunkQuery(tbl, nil, 10)
	if sql != `SELECT * FROM "s"."t" ORDER BY "id", "name" COLLATE "C" LIMIT 10` || len(args) != 0 {
		t.Errorf("first chunk: %s %v", sql, args)
	}
	sql, args = chunkQuery(tbl, []keyVal{{I: 7}, {S: "x"}}, 10)
	if sql != `SELECT * FROM "s"."t" WHERE ("id", "name" COLLATE "C") > ($1::bigint, $2::text) ORDER BY "id", "name" COLLATE "C" LIMIT 10` || len(args) != 2 || args[0] != int64(7) || args[1] != "x" {
		t.Errorf("next chunk: %s %v", sql, args)
	}
	tbl.byteOrder = []bool{false, true}
	if sql, _ = chunkQuery(tbl, nil, 10); sql != `SELECT * FROM "s"."t" ORDER BY "id", "name" LIMIT 10` {
		t.Errorf("a key of collation C: %s", sql)
	}
}

func TestKeyKinds(t *testing.T) {
	for typ, want := range map[string]keyKind{"integer": kindInt, "bigint": kindInt, "smallint": kindInt, "text": kindText, "character varying(20)": kindText,
		"uuid": kindUUID, "timestamp with time zone": kindTime, "timestamp(3) without time zone": kindTime, "date": kindTime} {
		if got, err := keyKindOf("t", "c", typ); err != nil || got != want {
			t.Errorf("%s: %v %v", typ, got, err)
		}
	}
	if _, err := keyKindOf("public.t", "c", "numeric"); err == nil {
		t.Error("numeric: no error")
	}
}

func TestRangeOf(t *testing.T) {
	kinds := []keyKind{kindInt}
	bounds := [][]keyVal{{{I: 10}}, {{I: 20}}}
	for _, tc := range []struct {
		k    int64
		want int
	}{{-5, 0}, {10, 0}, {11, 1}, {20, 1}, {21, 2}, {1 << 40, 2}} {
		if got := rangeOf(kinds, bounds, []keyVal{{I: tc.k}}); got != tc.want {
			t.Errorf("rangeOf(%d) = %d, want %d", tc.k, got, tc.want)
		}
	}
	if got := rangeOf(kinds, nil, []keyVal{{I: 3}}); got != 0 {
		t.Errorf("rangeOf of an unsplit table = %d, want 0", got)
	}
}

func TestRangeQuery(t *testing.T) {
	tab := tableInfo{schema: "public", name: "t", keys: []string{"a", "b"}, kinds: []keyKind{kindText, kindInt}}
	sql, args := rangeQuery(tab, []keyVal{{S: "x"}, {I: 1}}, []keyVal{{S: "y"}, {I: 2}})
	want := `SELECT * FROM "public"."t" WHERE ("a" COLLATE "C", "b") > ($1::text, $2::bigint) AND ("a" COLLATE "C", "b") <= ($3::text, $4::bigint)`
	if sql != want || len(args) != 4 {
		t.Errorf("rangeQuery = %s %v\nwant %s", sql, args, want)
	}
	if sql, _ := rangeQuery(tab, nil, nil); sql != `SELECT * FROM "public"."t"` {
		t.Errorf("whole table: %s", sql)
	}
}

// TestPlannerPacing: the planner holds once ahead ranges per reader are
// neither counted read nor covered by a completed checkpoint, and goes
// on when either says more were read; before any checkpoint it stops
// holding after noCheckpoints.
func TestPlannerPacing(t *testing.T) {
	p := &planner{s: &source{cfg: config{snapshotParallelism: 2, snapshotAhead: 2}}, read: &rangesRead{}}
	p.s.st = savedState{Planned: true, Tables: []tableProgress{{Bounds: make([][]keyVal, 20)}}}
	assign := func(n int) { p.s.st.Tables[0].Assigned += n }
	p.checkpoints = true
	if p.hold() {
		t.Fatal("holds with nothing assigned")
	}
	assign(4)
	if !p.hold() {
		t.Fatal("does not hold with 4 (2 readers × 2) unread")
	}
	p.read.n.Add(1)
	if p.hold() {
		t.Fatal("holds after a reader counted a range read")
	}
	assign(1)
	p.barrier(7) // after 5 assigned
	assign(3)    // 8 assigned, 1 counted read
	p.barrier(8)
	if !p.hold() {
		t.Fatal("does not hold with 7 unread")
	}
	p.complete(7)
	if p.done != 5 || p.hold() {
		t.Fatalf("after checkpoint 7 completed: done %d, hold %v; want 5 covered and no hold (8 < 5 + 4)", p.done, p.hold())
	}
	if len(p.barriers) != 1 {
		t.Fatalf("barriers left %v, want checkpoint 8's", p.barriers)
	}
	q := &planner{s: &source{cfg: config{snapshotParallelism: 1, snapshotAhead: 1}}, read: &rangesRead{}}
	q.s.st = savedState{Planned: true, Tables: []tableProgress{{Bounds: make([][]keyVal, 5), Assigned: 1}}}
	if !q.hold() {
		t.Fatal("without checkpoints: does not hold at first")
	}
	q.holdSince = q.holdSince.Add(-noCheckpoints)
	if q.hold() {
		t.Fatal("without checkpoints: still holds after noCheckpoints")
	}
}
