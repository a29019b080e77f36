package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/weirstream/weir"

// pureCores are the packages that must stay pure state machines.
var pureCores = []string{
	"internal/checkpoint",
	"internal/checkpoint/barrier",
	"internal/checkpoint/coordinator",
	"internal/checkpoint/registry",
	"internal/failover",
	"internal/twophase",
	"internal/network/credit",
	"internal/heartbeat",
	"internal/restart",
	"internal/jobmaster",
	"internal/watermark",
	"internal/window",
	"internal/ha/role",
	"internal/weak",
	"internal/autoscaler",
	"internal/reactive",
	"internal/asyncqueue",
}

// pureStd are the standard packages a pure core may import: values,
// formatting and arithmetic, nothing that does IO, blocks or locks. The one
// exception is log/slog for an injected logger (nil is silent), as raft's
// Config.Logger: logging is not state.
var pureStd = []string{
	"bytes", "cmp", "encoding", "encoding/binary", "errors", "fmt",
	"hash/crc32", "iter", "log/slog", "maps", "math", "math/bits", "math/rand/v2",
	"slices", "sort", "strconv", "strings", "time", "unicode/utf8",
}

// pureModule are the module packages a pure core may import besides the
// other cores: configuration parsing and key-group arithmetic.
var pureModule = []string{"internal/config", "internal/keygroup"}

// clockCalls read the wall clock or wait on it; a pure core takes time as
// an input instead.
var clockCalls = []string{"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "NewTimer", "NewTicker", "Tick"}

// lowerLayers must not import upperLayers.
var (
	lowerLayers = []string{
		"internal/checkpoint", "internal/codec", "internal/config", "internal/failover",
		"internal/faults", "internal/jobmaster", "internal/watermark", "internal/window", "internal/heartbeat", "internal/keygroup", "internal/network",
		"internal/restart", "internal/state", "internal/twophase", "internal/vfs", "internal/weak",
		"internal/jobstatus", "internal/deployment", "internal/dataflow", "internal/asyncqueue", "internal/reactive",
	}
	// lowerExempt are tools that live under a lower layer's folder but sit
	// on top of the runtime.
	lowerExempt = []string{"internal/checkpoint/inspect"}
	upperLayers = []string{"internal/runtime", "internal/cluster", "internal/rest", "internal/metrics", "internal/bench", "internal/jobs", "app", "connectors", "."}
)

// modeRuntimes are the runtimes of consistency modes that recover tasks
// on their own (internal/runtime/weakrt for WEAKLY_CONSISTENT). Each
// imports internal/runtime and plugs into it through runtime.RecoveryMode
// (JobConfig.Recovery), so the runtime never imports one, and the pure
// core of the mode (internal/weak) stays below both; only modeWirers,
// where a job's configuration is resolved, name one.
var (
	modeRuntimes = []string{"internal/runtime/weakrt"}
	modeWirers   = []string{"internal/plan"}
)

// apiUsers may import the public package weir; no other internal package may.
var apiUsers = []string{"internal/jobs", "internal/bench", "internal/testutil", "app", "connectors", "examples", "cmd", "."}

// testHelpers are the packages only tests import: fakes, embedded servers
// and scaffolding (internal/testutil/coretest for the pure cores' scripts
// and seeds). A non-test file may import one only inside another helper.
var testHelpers = []string{
	"internal/testutil", "internal/kafkatest", "internal/ha/etcdtest", "internal/vfs/s3fs/s3test",
	"internal/security/securitytest", "internal/deploytest", "internal/dataflow/dataflowtest",
}

// The job's status (internal/jobstatus) has readers and writers: readers
// hold a *jobstatus.JobStatus and command a job through jobstatus.Control;
// only writers record, through a jobstatus.Recorder.
var (
	// statusReaders serve a job's status and commands; they read
	// internal/jobstatus and never reach into the runtime for it.
	statusReaders = []string{"internal/rest", "internal/metrics", "internal/dashboard"}
	// statusWriters may name jobstatus.Recorder and write the status'
	// counters: the runtime records its job, the cluster's JobManager sums
	// the weak figures its TaskManagers report, and plan resets an Env's
	// status between runs.
	statusWriters = []string{"internal/jobstatus", "internal/runtime", "internal/cluster", "internal/plan"}
	// recorderNames are the names that hand out write access.
	recorderNames = []string{"Recorder", "RecorderOf"}
	// counterWrites are the writing methods of sync/atomic's types.
	counterWrites = []string{"Store", "Add", "Swap", "CompareAndSwap", "And", "Or"}
)

// pkgFiles is a package's non-test files, parsed.
type pkgFiles struct {
	rel   string // path relative to the module root, "." for the root
	files map[string]*ast.File
}

func TestLayers(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := load(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 20 {
		t.Fatalf("found only %d packages under %s: the walk is broken", len(pkgs), root)
	}
	for _, v := range check(pkgs) {
		t.Error(v)
	}
}

// TestRulesCatchViolations feeds check made-up packages that break each
// rule once, so that a rule that stopped matching fails here.
func TestRulesCatchViolations(t *testing.T) {
	src := map[string]string{
		"internal/failover":   "package failover\nimport (\"os\"; \"time\")\nfunc f() { go g(); _ = time.Now(); _ = os.Args }\nfunc g() {}\n",
		"internal/state":      "package state\nimport _ \"github.com/weirstream/weir/internal/runtime\"\n",
		"internal/runtime":    "package runtime\nimport _ \"github.com/weirstream/weir\"\n",
		"internal/twophase":   "package twophase\nimport \"time\"\nvar d = time.Second\n", // allowed
		"internal/jobs/demo":  "package demo\nimport _ \"github.com/weirstream/weir\"\n",  // allowed
		"internal/checkpoint": "package checkpoint\nimport _ \"github.com/weirstream/weir/internal/vfs\"\n",
		"internal/cluster":    "package cluster\nimport _ \"github.com/weirstream/weir/internal/testutil/coretest\"\n",
		"internal/kafkatest":  "package kafkatest\nimport _ \"github.com/weirstream/weir/internal/testutil\"\n", // allowed

		// The job's status and the deployment vocabulary: lower layers; a
		// status reader that imports the runtime, takes a Recorder and
		// writes two counters (a Load is allowed); a writer that may.
		"internal/jobstatus":  "package jobstatus\nimport (\"sync/atomic\"; _ \"github.com/weirstream/weir/internal/runtime\")\ntype JobStatus struct{ Restarts atomic.Int64; Weak WeakStats }\ntype WeakStats struct{ Lost atomic.Int64 }\n",
		"internal/deployment": "package deployment\nimport _ \"github.com/weirstream/weir/internal/runtime\"\n",
		"internal/dataflow":   "package dataflow\nimport _ \"github.com/weirstream/weir/internal/runtime\"\n",
		"internal/rest":       "package rest\nimport (_ \"github.com/weirstream/weir/internal/runtime\"; \"github.com/weirstream/weir/internal/jobstatus\")\nfunc f(s *jobstatus.JobStatus) { jobstatus.RecorderOf(s).SetFailure(\"x\"); s.Restarts.Store(1); s.Weak.Lost.Add(1); _ = s.Restarts.Load() }\n",
		"internal/plan":       "package plan\nimport (js \"github.com/weirstream/weir/internal/jobstatus\"; _ \"github.com/weirstream/weir/internal/runtime/weakrt\")\nfunc f(s *js.JobStatus) { js.RecorderOf(s).Restarts.Store(0) }\n", // allowed

		// WEAKLY_CONSISTENT's runtime: the runtime and the mode's pure
		// core must not import it, nor may anyone but plan; it may
		// import the runtime and write the status.
		"internal/runtime/x":      "package x\nimport _ \"github.com/weirstream/weir/internal/runtime/weakrt\"\n",
		"internal/weak":           "package weak\nimport _ \"github.com/weirstream/weir/internal/runtime/weakrt\"\n",
		"internal/bench":          "package bench\nimport _ \"github.com/weirstream/weir/internal/runtime/weakrt\"\n",
		"internal/runtime/weakrt": "package weakrt\nimport (_ \"github.com/weirstream/weir/internal/runtime\"; js \"github.com/weirstream/weir/internal/jobstatus\")\nfunc f(s *js.WeakStats) { s.Lost.Add(1) }\n", // allowed
	}
	var pkgs []pkgFiles
	fset := token.NewFileSet()
	for rel, s := range src {
		f, err := parser.ParseFile(fset, rel+"/x.go", s, 0)
		if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, pkgFiles{rel: rel, files: map[string]*ast.File{rel + "/x.go": f}})
	}
	got := check(pkgs)
	want := []string{
		"internal/failover/x.go: imports os",
		"internal/failover/x.go: starts a goroutine",
		"internal/failover/x.go: calls time.Now",
		"internal/state/x.go: imports internal/runtime",
		"internal/runtime/x.go: imports the public package weir",
		"internal/checkpoint/x.go: imports internal/vfs",
		"internal/cluster/x.go: imports internal/testutil/coretest",
		"internal/jobstatus/x.go: imports internal/runtime",
		"internal/deployment/x.go: imports internal/runtime",
		"internal/dataflow/x.go: imports internal/runtime",
		"internal/rest/x.go: imports internal/runtime (a status reader",
		"internal/rest/x.go: uses jobstatus.RecorderOf",
		"internal/rest/x.go: calls Restarts.Store",
		"internal/rest/x.go: calls Lost.Add",
		"internal/runtime/x/x.go: imports internal/runtime/weakrt (the runtime holds",
		"internal/weak/x.go: imports internal/runtime/weakrt (a pure core",
		"internal/bench/x.go: imports internal/runtime/weakrt (a mode's runtime is wired in only",
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(v string) bool { return strings.HasPrefix(v, w) }) {
			t.Errorf("no violation %q reported; got:\n%s", w, strings.Join(got, "\n"))
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d violations, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
}

// load parses the non-test Go files of every package in the module,
// skipping testdata, hidden folders and generated protobuf code.
func load(root string) ([]pkgFiles, error) {
	byDir := map[string]*pkgFiles{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		dir = filepath.ToSlash(dir)
		p := byDir[dir]
		if p == nil {
			p = &pkgFiles{rel: dir, files: map[string]*ast.File{}}
			byDir[dir] = p
		}
		rel, _ := filepath.Rel(root, path)
		p.files[filepath.ToSlash(rel)] = f
		return nil
	})
	var out []pkgFiles
	for _, p := range byDir {
		out = append(out, *p)
	}
	return out, err
}

// under reports whether rel is the package prefix or one below it.
func under(rel, prefix string) bool {
	if prefix == "." {
		return rel == "."
	}
	return rel == prefix || strings.HasPrefix(rel, prefix+"/")
}

func underAny(rel string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return under(rel, p) })
}

// check returns one line per violation, sorted.
func check(pkgs []pkgFiles) []string {
	var out []string
	counters := statusCounters(pkgs)
	for _, p := range pkgs {
		pure := slices.Contains(pureCores, p.rel)
		lower := underAny(p.rel, lowerLayers) && !underAny(p.rel, lowerExempt)
		for name, f := range p.files {
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				inModule := path == module || strings.HasPrefix(path, module+"/")
				rel := "."
				if strings.HasPrefix(path, module+"/") {
					rel = strings.TrimPrefix(path, module+"/")
				}
				switch {
				case pure && !inModule && !slices.Contains(pureStd, path):
					out = append(out, name+": imports "+path+" (a pure core imports no IO, sync or OS package)")
				case pure && inModule && !slices.Contains(pureCores, rel) && !slices.Contains(pureModule, rel):
					out = append(out, name+": imports "+rel+" (a pure core imports only other cores, config and keygroup)")
				case lower && inModule && rel != "." && underAny(rel, upperLayers):
					out = append(out, name+": imports "+rel+" (a lower layer must not reach up to the engine, API or connectors)")
				case inModule && underAny(rel, modeRuntimes) && under(p.rel, "internal/runtime") && !underAny(p.rel, modeRuntimes):
					out = append(out, name+": imports "+rel+" (the runtime holds a mode's runtime only as a runtime.RecoveryMode, set on JobConfig.Recovery; it never imports it)")
				case inModule && underAny(rel, modeRuntimes) && !underAny(p.rel, modeRuntimes) && !underAny(p.rel, modeWirers):
					out = append(out, name+": imports "+rel+" (a mode's runtime is wired in only where the configuration is resolved, internal/plan)")
				case inModule && rel == "." && !underAny(p.rel, apiUsers):
					out = append(out, name+": imports the public package weir (the engine must not depend on its own API)")
				case inModule && underAny(rel, testHelpers) && !underAny(p.rel, testHelpers):
					out = append(out, name+": imports "+rel+" (a test helper: only _test.go files import it)")
				}
			}
			if pure {
				out = append(out, impureCalls(name, f)...)
			}
			out = append(out, statusUse(p.rel, name, f, counters)...)
		}
	}
	slices.Sort(out)
	return out
}

// statusCounters returns the names of the atomic counters of
// jobstatus.JobStatus and jobstatus.WeakStats, read from the package's
// declarations so that a counter added later is covered.
func statusCounters(pkgs []pkgFiles) map[string]bool {
	out := map[string]bool{}
	for _, p := range pkgs {
		if p.rel != "internal/jobstatus" {
			continue
		}
		for _, f := range p.files {
			ast.Inspect(f, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok || (ts.Name.Name != "JobStatus" && ts.Name.Name != "WeakStats") {
					return true
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					return false
				}
				for _, fl := range st.Fields.List {
					if sel, ok := fl.Type.(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.Ident); ok && x.Name == "atomic" {
							for _, id := range fl.Names {
								out[id.Name] = true
							}
						}
					}
				}
				return false
			})
		}
	}
	return out
}

// statusUse checks one file against the rules of the job's status: a
// status reader does not import the runtime, and only a status writer
// names jobstatus.Recorder or writes one of the status' counters
// (X.Counter.Store(…), X.Weak.Counter.Add(…); without type information a
// reader's own field of a counter's name is taken for one: rename it).
func statusUse(rel, name string, f *ast.File, counters map[string]bool) []string {
	var out []string
	jobstatus := ""
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		switch {
		case path == module+"/internal/runtime" && underAny(rel, statusReaders):
			out = append(out, name+": imports internal/runtime (a status reader reads internal/jobstatus and commands a job through jobstatus.Control)")
		case path == module+"/internal/jobstatus":
			jobstatus = "jobstatus"
			if imp.Name != nil {
				jobstatus = imp.Name.Name
			}
		}
	}
	if jobstatus == "" || underAny(rel, statusWriters) {
		return out
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name == jobstatus && slices.Contains(recorderNames, n.Sel.Name) {
				out = append(out, name+": uses jobstatus."+n.Sel.Name+" (only the runtime, the cluster and plan write a job's status)")
			}
		case *ast.CallExpr:
			m, ok := n.Fun.(*ast.SelectorExpr)
			if !ok || !slices.Contains(counterWrites, m.Sel.Name) {
				return true
			}
			if c, ok := m.X.(*ast.SelectorExpr); ok && counters[c.Sel.Name] {
				out = append(out, name+": calls "+c.Sel.Name+"."+m.Sel.Name+" (a reader only Loads the status' counters; the runtime writes them)")
			}
		}
		return true
	})
	return out
}

// impureCalls finds go statements and clock reads in a pure core's file.
func impureCalls(name string, f *ast.File) []string {
	timeName := ""
	for _, imp := range f.Imports {
		if imp.Path.Value == `"time"` {
			timeName = "time"
			if imp.Name != nil {
				timeName = imp.Name.Name
			}
		}
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			out = append(out, name+": starts a goroutine (a pure core owns none)")
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && timeName != "" && id.Name == timeName && slices.Contains(clockCalls, n.Sel.Name) {
				out = append(out, name+": calls time."+n.Sel.Name+" (a pure core takes time as an event)")
			}
		}
		return true
	})
	return out
}
