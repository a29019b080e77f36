package main

// End-to-end tests of the weir binary. TestMain builds it once; each test
// runs it as a child process, the way a user (or a crash) would: exit codes,
// stderr and the committed files are what is asserted, never internals.

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/connectors/file"
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/testutil"
)

// weirBin is the binary TestMain built; set once before any test runs.
var weirBin string

// seedFlag reproduces a run of the randomised kill tests.
var seedFlag = flag.Int64("weir.seed", 0, "seed for the random kill delays of the end-to-end tests (0: from the clock)")

// killRand is a kill test's random source: -weir.seed, or the clock, with
// the seed logged so a failing run can be repeated; stream tells tests
// apart.
func killRand(t *testing.T, stream uint64) *rand.Rand {
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("kills from seed %d (reproduce with -weir.seed=%d)", seed, seed)
	return rand.New(rand.NewPCG(uint64(seed), stream))
}

func TestMain(m *testing.M) {
	flag.Parse()
	bin, cleanup, err := testutil.BuildWeir("weir-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	weirBin = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// result is a finished weir process.
type result struct {
	code   int // exit code; -1 if killed by a signal
	stderr string
	stdout string
}

// runWeir runs the binary to its end, failing the test if it has not ended
// within timeout (a hang, typically a restart loop).
func runWeir(t *testing.T, timeout time.Duration, args ...string) result {
	t.Helper()
	r, ok := runFor(t, timeout, args...)
	if !ok {
		t.Fatalf("weir %s did not end within %s; stderr (end):\n%s", strings.Join(args, " "), timeout, tail(r.stderr, 2000))
	}
	return r
}

// runFor runs the binary for at most timeout; ok is false if it had to be
// killed then.
func runFor(t *testing.T, timeout time.Duration, args ...string) (r result, ok bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, weirBin, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); cmd.ProcessState == nil {
		t.Fatalf("weir %s: %v", strings.Join(args, " "), err)
	}
	r = result{code: cmd.ProcessState.ExitCode(), stderr: stderr.String(), stdout: stdout.String()}
	return r, ctx.Err() == nil
}

// running is a weir process started in the background whose stderr is
// collected and scanned line by line.
type running struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	lines  chan string // every stderr line; closed at EOF
	mu     sync.Mutex  // guards buf
	buf    strings.Builder
	done   chan struct{} // closed once the process has ended
}

// startWeir starts the binary; the process is killed when the test ends or
// timeout passes.
func startWeir(t *testing.T, timeout time.Duration, args ...string) *running {
	t.Helper()
	return startWeirEnv(t, timeout, nil, args...)
}

// startWeirEnv is startWeir with env (KEY=VALUE) added to the process's.
func startWeirEnv(t *testing.T, timeout time.Duration, env []string, args ...string) *running {
	t.Helper()
	return startCommand(t, timeout, env, weirBin, args...)
}

// startCommand starts name with args as startWeirEnv starts the binary:
// e.g. "ip netns exec NS weir …", which runs weir itself (ip execs it
// in the namespace), so that signals reach weir.
func startCommand(t *testing.T, timeout time.Duration, env []string, name string, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	cmd := exec.CommandContext(ctx, name, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	pipe, err := cmd.StderrPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start weir: %v", err)
	}
	r := &running{cmd: cmd, cancel: cancel, lines: make(chan string, 1<<16), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			r.mu.Lock()
			r.buf.WriteString(sc.Text() + "\n")
			r.mu.Unlock()
			select {
			case r.lines <- sc.Text():
			default: // nobody reads that far; the buffer keeps the text
			}
		}
		io.Copy(io.Discard, pipe)
		close(r.lines)
		cmd.Wait() // the exit status is read from cmd.ProcessState
		close(r.done)
	}()
	t.Cleanup(func() { r.kill(); cancel() })
	return r
}

// kill SIGKILLs the process (if it still runs) and waits for it. It reports
// whether the process was still running when killed.
func (r *running) kill() bool {
	select {
	case <-r.done:
		return false
	default:
	}
	r.cmd.Process.Kill() // SIGKILL
	<-r.done
	return true
}

// wait waits for the process to end by itself.
func (r *running) wait() result {
	<-r.done
	return result{code: r.cmd.ProcessState.ExitCode(), stderr: r.stderr()}
}

func (r *running) stderr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}

var completedRE = regexp.MustCompile(`msg="checkpoint completed" id=(\d+)`)

// waitCompleted reads the stderr of a -v run until checkpoint id >= n has
// completed. It fails the test if the process ends first.
func (r *running) waitCompleted(t *testing.T, n int) int {
	t.Helper()
	for l := range r.lines {
		if m := completedRE.FindStringSubmatch(l); m != nil {
			if id, _ := strconv.Atoi(m[1]); id >= n {
				return id
			}
		}
	}
	t.Fatalf("weir ended before checkpoint %d completed; stderr:\n%s", n, tail(r.stderr(), 3000))
	return 0
}

// completedCheckpoints lists the ids of the chk-N folders of jobDir that
// hold a _metadata file, ascending.
func completedCheckpoints(t *testing.T, jobDir string) []int {
	t.Helper()
	entries, err := os.ReadDir(jobDir)
	if err != nil {
		t.Fatalf("list checkpoints: %v", err)
	}
	var ids []int
	for _, e := range entries {
		n, ok := strings.CutPrefix(e.Name(), "chk-")
		if !ok || !e.IsDir() {
			continue
		}
		id, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(jobDir, e.Name(), "_metadata")); err == nil {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	return ids
}

// committed returns the committed lines of an exactly-once file sink folder.
func committed(t *testing.T, dir string) []string {
	t.Helper()
	lines, err := file.ReadCommitted(dir)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// assertNoInProgress fails if dir holds hidden in-progress part files: after
// a successful run every transaction is committed or aborted.
func assertNoInProgress(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("%s: leftover hidden file %s after a successful run", dir, e.Name())
		}
	}
}

// assertNoOrphanCheckpoints fails on a checkpoint folder (chk-N) under
// root without its _metadata: once a job ended, a checkpoint that never
// completed must have been cleaned up, or its files leak.
func assertNoOrphanCheckpoints(t *testing.T, root string) {
	t.Helper()
	var orphans []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || !strings.HasPrefix(d.Name(), "chk-") {
			return nil
		}
		if _, err := os.Stat(filepath.Join(p, "_metadata")); err != nil {
			orphans = append(orphans, p)
		}
		return filepath.SkipDir
	})
	if len(orphans) > 0 {
		t.Errorf("checkpoint folders without metadata left after the job ended: %v", orphans)
	}
}

// assertNoOrphans checks every job checkpoint folder under root (one
// holding chk-N folders or a shared area) with testutil.CheckpointOrphans:
// each chk-N has _metadata, at most retained (num-retained) completed
// checkpoints are kept, and the shared area holds exactly the files the
// kept checkpoints reference, so neither a killed task's nor a cancelled
// checkpoint's incremental uploads are left behind.
func assertNoOrphans(t *testing.T, root string, retained int) {
	t.Helper()
	jobDirs := map[string]bool{}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), "chk-") || d.Name() == checkpoint.SharedDir {
			jobDirs[filepath.Dir(p)] = true
			return filepath.SkipDir
		}
		return nil
	})
	if len(jobDirs) == 0 {
		t.Logf("assertNoOrphans: no checkpoint folder under %s", root)
	}
	for dir := range jobDirs {
		ents, _ := os.ReadDir(dir)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Logf("assertNoOrphans: %s holds %v", dir, names)
		d, err := testutil.CheckpointOrphans(dir, retained)
		if err != nil {
			t.Fatal(err)
		}
		if d != "" {
			t.Errorf("checkpoint folder %s after the job: %s", dir, d)
		}
	}
}

// extras returns the lines of got that are not in want (duplicates
// counted): a committed output may miss lines mid-run, never have extra.
func extras(want map[string]int, got []string) []string {
	seen := make(map[string]int, len(got))
	var out []string
	for _, l := range got {
		seen[l]++
		if seen[l] > want[l] {
			out = append(out, l)
		}
	}
	return out
}

// complete reports whether got is exactly the multiset want: a run whose
// SIGKILL landed after its job ended (the final checkpoint committed
// everything and the finished job's checkpoints were removed) left the
// whole output, and a rerun would rightly refuse to commit it again.
func complete(want map[string]int, got []string) bool {
	if len(got) != sumCounts(want) {
		return false
	}
	return len(extras(want, got)) == 0
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

func countLines(lines []string) map[string]int {
	m := make(map[string]int, len(lines))
	for _, l := range lines {
		m[l]++
	}
	return m
}

// flipByte inverts the bits of the byte in the middle of path.
func flipByte(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		t.Fatalf("%s is empty; nothing to corrupt", path)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// corruptCheckpoint damages checkpoint folder chk so that it no longer
// verifies: it flips a byte of its first keyed state file or, if it holds
// none (its state may live in files of older checkpoints), truncates its
// _metadata. It returns the damaged file relative to the job folder, as
// error messages name it.
func corruptCheckpoint(t *testing.T, chk string) string {
	t.Helper()
	keyed, err := filepath.Glob(filepath.Join(chk, "*.keyed"))
	if err != nil {
		t.Fatal(err)
	}
	if len(keyed) > 0 {
		sort.Strings(keyed)
		flipByte(t, keyed[0])
		return filepath.Join(filepath.Base(chk), filepath.Base(keyed[0]))
	}
	meta := filepath.Join(chk, "_metadata")
	fi, err := os.Stat(meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(meta, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	return filepath.Base(chk) + ": _metadata"
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// wantExit fails unless r exited with code.
func wantExit(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d; stderr:\n%s", r.code, code, tail(r.stderr, 3000))
	}
}

// wantLine fails unless text has a line exactly equal to line.
func wantLine(t *testing.T, text, line string) {
	t.Helper()
	for l := range strings.SplitSeq(text, "\n") {
		if l == line {
			return
		}
	}
	t.Errorf("no line %q in stderr:\n%s", line, tail(text, 2000))
}

// wantContains fails unless text contains every one of subs.
func wantContains(t *testing.T, text string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(text, s) {
			t.Errorf("stderr lacks %q:\n%s", s, tail(text, 2000))
		}
	}
}

// refusedAsFinished reports a run refused because the job's folder records
// that it FINISHED: the rerun after a kill that landed once the killed run
// had recorded its end (which follows its sinks' close), where nothing is
// left to resume or clean.
func refusedAsFinished(res result) bool {
	return res.code == 1 && strings.Contains(res.stderr, "already FINISHED")
}
