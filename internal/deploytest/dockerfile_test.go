package deploytest

import (
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// repoRoot is the module root, relative to this package.
const repoRoot = "../.."

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, …
	args string
	line int
}

// stage is a build stage: its FROM and the instructions after it.
type stage struct {
	image, name string
	body        []instruction
}

func parseDockerfile(t *testing.T) []stage {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var ins []instruction
	var cur strings.Builder
	start := 0
	for i, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if cur.Len() == 0 && (l == "" || strings.HasPrefix(l, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if strings.HasSuffix(l, `\`) {
			cur.WriteString(strings.TrimSuffix(l, `\`) + " ")
			continue
		}
		cur.WriteString(l)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		ins = append(ins, instruction{strings.ToUpper(cmd), strings.TrimSpace(args), start})
		cur.Reset()
	}
	var stages []stage
	for _, in := range ins {
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			s := stage{image: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("Dockerfile line %d: %s before the first FROM", in.line, in.cmd)
		}
		stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
	}
	return stages
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.body {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// goBuild returns the build stage's go build command line.
func goBuild(t *testing.T, s stage) []string {
	t.Helper()
	for _, in := range s.all("RUN") {
		if strings.Contains(in.args, "go build") {
			return shellWords(t, in.args)
		}
	}
	t.Fatalf("stage %s has no RUN … go build", s.name)
	return nil
}

// shellWords splits a simple shell command line: words, single and double
// quotes; anything fancier (pipes, &&, $) fails the test.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	if strings.ContainsAny(s, "|&;$`<>") {
		t.Fatalf("build step %q: keep it one plain command, the test runs it", s)
	}
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("build step %q: unbalanced quote", s)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// TestDockerfile checks the image's shape: a Go build stage making a
// static binary, a minimal non-root run stage with weir as entrypoint.
func TestDockerfile(t *testing.T) {
	stages := parseDockerfile(t)
	if len(stages) < 2 {
		t.Fatalf("want a multi-stage build (build, run), got %d stage(s)", len(stages))
	}
	build, run := stages[0], stages[len(stages)-1]
	if !strings.HasPrefix(build.image, "golang:1.26") {
		t.Errorf("build stage FROM %s: want golang:1.26 (go.mod's go version)", build.image)
	}
	if build.name == "" {
		t.Errorf("build stage FROM %s has no AS name for COPY --from", build.image)
	}
	words := goBuild(t, build)
	if !slices.Contains(words, "CGO_ENABLED=0") {
		t.Errorf("go build %q: want CGO_ENABLED=0 (a static binary for a base image without libc)", words)
	}
	for _, f := range []string{"-trimpath", "./cmd/weir"} {
		if !slices.Contains(words, f) {
			t.Errorf("go build %q: want %s", words, f)
		}
	}

	if !strings.HasPrefix(run.image, "gcr.io/distroless/static") && run.image != "scratch" {
		t.Errorf("run stage FROM %s: want distroless static or scratch", run.image)
	}
	copied := false
	for _, in := range run.all("COPY") {
		if strings.Contains(in.args, "--from="+build.name) && strings.HasSuffix(in.args, " /weir") {
			copied = true
		}
	}
	if !copied {
		t.Errorf("run stage: want COPY --from=%s … /weir", build.name)
	}
	users := run.all("USER")
	if len(users) == 0 {
		t.Errorf("run stage has no USER: the image would run as root")
	} else {
		u := users[len(users)-1].args
		name, _, _ := strings.Cut(u, ":")
		if name == "0" || name == "root" || name == "" {
			t.Errorf("run stage USER %s: want a non-root user", u)
		}
		if name != "65532" {
			t.Errorf("run stage USER %s: want 65532 (distroless nonroot; the manifests' runAsUser)", u)
		}
	}
	eps := run.all("ENTRYPOINT")
	if len(eps) != 1 {
		t.Fatalf("run stage: want one ENTRYPOINT, got %d", len(eps))
	}
	var ep []string
	if err := json.Unmarshal([]byte(eps[0].args), &ep); err != nil {
		t.Errorf("ENTRYPOINT %s: want the exec form [\"/weir\"] (signals reach weir): %v", eps[0].args, err)
	} else if !slices.Equal(ep, []string{"/weir"}) {
		t.Errorf("ENTRYPOINT %q: want [\"/weir\"]", ep)
	}
	exposed := dockerfileExposed(t)
	for _, p := range []string{"6123", "8081"} {
		if !slices.Contains(exposed, p) {
			t.Errorf("EXPOSE %q: want the JobManager's default port %s", exposed, p)
		}
	}
}

// dockerfileExposed lists the run stage's EXPOSEd ports.
func dockerfileExposed(t *testing.T) []string {
	stages := parseDockerfile(t)
	var ports []string
	for _, in := range stages[len(stages)-1].all("EXPOSE") {
		for _, p := range strings.Fields(in.args) {
			p, _, _ = strings.Cut(p, "/")
			ports = append(ports, p)
		}
	}
	return ports
}

// TestDockerfileBuild runs the build stage's go build command (with -o
// into a temporary folder) and checks the result is a static executable:
// no interpreter, no dynamic section, no shared libraries. It proves the
// image's build step without a Docker engine.
func TestDockerfileBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds weir (minutes on a cold build cache)")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	words := goBuild(t, parseDockerfile(t)[0])
	var env []string
	for len(words) > 0 && strings.Contains(words[0], "=") {
		env = append(env, words[0])
		words = words[1:]
	}
	if len(words) < 2 || words[0] != "go" || words[1] != "build" {
		t.Fatalf("build step %q: want [VAR=value …] go build …", words)
	}
	out := filepath.Join(t.TempDir(), "weir")
	args := []string{"build"}
	for i := 2; i < len(words); i++ {
		if words[i] == "-o" {
			i++ // the image's path; ours instead
			continue
		}
		args = append(args, words[i])
	}
	args = append(args[:len(args)-1], "-o", out, args[len(args)-1])
	cmd := exec.Command(gobin, args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s (%s): %v\n%s", gobin, strings.Join(args, " "), strings.Join(env, " "), err, b)
	}

	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC {
		t.Errorf("weir is ELF %v: want a fixed executable (ET_EXEC), not a position-independent one needing a loader", f.Type)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("weir has a %v program header: it is dynamically linked", p.Type)
		}
	}
	if s := f.Section(".dynamic"); s != nil {
		t.Errorf("weir has a .dynamic section: it is dynamically linked")
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("weir needs shared libraries %q", libs)
	}
	v, err := exec.Command(out, "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(v), "jobmanager") {
		t.Errorf("the built weir --help: %v\n%s", err, v)
	}
}
