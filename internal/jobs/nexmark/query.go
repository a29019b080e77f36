// Package nexmark holds weir's Nexmark queries (q0–q5, q7–q22: every
// query Flink's Nexmark suite runs), each written with the typed API in
// its own file qN.go, with the semantics of nexmark/nexmark's
// queries/qN.sql, and beside it in qN_ref.go an independent hand-written
// single-goroutine computation of the same query over the same generator:
// the reference that --verify compares with and the limit that
// `weir bench nexmark` measures the engine against.
//
// Output rows are CSV lines, the query's SELECT list in order, times as
// epoch milliseconds. Queries whose result updates write a changelog:
// every line starts with Flink's row kind (+I, -U, +U, -D).
//
// Owns: the queries and their references. Must not touch: engine
// internals; the queries use the public API only.
package nexmark

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connectors/nexmark"
)

// RowKind is a changelog row's kind, as Flink prints it.
type RowKind uint8

// The row kinds of a changelog.
const (
	Insert       RowKind = iota // +I
	UpdateBefore                // -U: retracts the row it carries
	UpdateAfter                 // +U
	Delete                      // -D: retracts the row it carries
)

func (k RowKind) String() string { return [...]string{"+I", "-U", "+U", "-D"}[k] }

// Row is one output row of a query: AppendCSV appends its columns as one
// CSV line without the newline. It should not allocate.
type Row interface {
	AppendCSV(dst []byte) []byte
}

// Change is a row of an updating query's changelog.
type Change[T Row] struct {
	Kind RowKind
	Row  T
}

// AppendCSV writes "+I,<row>".
func (c Change[T]) AppendCSV(dst []byte) []byte {
	dst = append(dst, c.Kind.String()...)
	dst = append(dst, ',')
	return c.Row.AppendCSV(dst)
}

// Params are what a query is built with.
type Params struct {
	// Gen is the generator the source uses; a query that needs a
	// side input (q13) or the generator's configuration reads it here.
	Gen nexmark.Config
	// Out is the exactly-once file sink's folder; empty means the rows
	// are discarded unformatted, as Flink's benchmark's blackhole sink.
	Out string
	// SideInput is q13's side input file (key,value lines).
	SideInput string
}

// Query is one Nexmark query.
type Query struct {
	Name string
	// Columns is the SELECT list, in order (without the row kind).
	Columns []string
	// Changelog queries write +I/-U/+U/-D lines.
	Changelog bool
	// ProcessingTime queries (q12) depend on the wall clock: their rows
	// are not a function of the events, and Verify checks what is.
	ProcessingTime bool
	// Stateful queries keep keyed state (they are run with the lsm
	// backend in the benchmark and the failure tests).
	Stateful bool
	// MayBeEmpty queries can commit no rows over a small input (say why
	// where it is set); the tests otherwise refuse an empty result.
	MayBeEmpty bool
	// Build adds the query to env, reading events (with timestamps and
	// watermarks dateTime − 4 s), and ends it in Sink.
	Build func(env *weir.Env, events weir.Stream[nexmark.Event], p Params) error
	// Reference computes the query by hand over events 0 … n-1 of the
	// generator in one goroutine and hands every row to out.
	Reference func(p Params, n int64, out *RefOut) error
	// Verify, if set, replaces the default check (the committed lines,
	// after applying a changelog, equal Reference's rows as multisets).
	Verify func(p Params, n int64, committed []string) error
}

var registry = map[string]*Query{}

// register adds q; each qN.go calls it from init.
func register(q *Query) {
	if _, dup := registry[q.Name]; dup {
		panic("nexmark: query " + q.Name + " registered twice")
	}
	registry[q.Name] = q
}

// Lookup returns the query called name ("q5").
func Lookup(name string) (*Query, error) {
	if q, ok := registry[name]; ok {
		return q, nil
	}
	return nil, fmt.Errorf("unknown Nexmark query %q: want one of %s (Flink's suite does not run q6)", name, strings.Join(Names(), ", "))
}

// Names lists the registered queries in numeric order.
func Names() []string {
	var names []string
	for n := range registry {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		var a, b int
		fmt.Sscanf(names[i], "q%d", &a)
		fmt.Sscanf(names[j], "q%d", &b)
		return a < b
	})
	return names
}

// RefOut receives a reference computation's rows. With Collect it keeps
// each row's CSV line; otherwise it only counts them (the benchmark's
// baseline, like the engine's discarding sink, does not format).
type RefOut struct {
	Collect bool
	Rows    int64
	Lines   []string
	buf     []byte
}

// Emit hands a row to out. Generic rather than an interface parameter so
// the baseline loop does not box every row.
func Emit[T Row](out *RefOut, r T) {
	out.Rows++
	if out.Collect {
		out.buf = r.AppendCSV(out.buf[:0])
		out.Lines = append(out.Lines, string(out.buf))
	}
}

// EmitChange hands a changelog row to out.
func EmitChange[T Row](out *RefOut, k RowKind, r T) { Emit(out, Change[T]{k, r}) }

// ApplyChangelog applies +I/+U (add the row) and -U/-D (remove an equal
// row) lines in order and returns the resulting table as a sorted list of
// rows without their kinds. A retraction of a row that is not there is an
// error: the changelog is not consistent.
func ApplyChangelog(lines []string) ([]string, error) {
	table := map[string]int{}
	for i, l := range lines {
		kind, row, ok := strings.Cut(l, ",")
		if !ok {
			return nil, fmt.Errorf("line %d %q: no row kind", i+1, l)
		}
		switch kind {
		case "+I", "+U":
			table[row]++
		case "-U", "-D":
			if table[row] == 0 {
				return nil, fmt.Errorf("line %d %q retracts a row that is not in the table", i+1, l)
			}
			table[row]--
		default:
			return nil, fmt.Errorf("line %d %q: unknown row kind %q (want +I, -U, +U or -D)", i+1, l, kind)
		}
	}
	var rows []string
	for r, n := range table {
		for range n {
			rows = append(rows, r)
		}
	}
	slices.Sort(rows)
	return rows, nil
}
