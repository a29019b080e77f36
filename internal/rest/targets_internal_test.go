package rest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// resolveSavepointTarget takes a relative name under state.savepoints.dir
// (never under the serving process's working directory), keeps today's
// rule for absolute targets, and refuses a relative name that climbs out
// with a message saying that relative names are taken under the key.
func TestResolveSavepointTarget(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "savepoints")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	// Another working directory must change nothing.
	t.Chdir(t.TempDir())
	const refusedRelative, refusedAbsolute = "a relative name is taken under state.savepoints.dir", "is outside state.savepoints.dir"
	for _, tc := range []struct {
		root     string
		allowAny bool
		raw      string
		want     string // the resolved target, or "" if refused
		msg      string // a substring of the refusal
	}{
		{root, false, "", root, ""},
		{root, false, "rel", filepath.Join(root, "rel"), ""},
		{root, false, "a/b", filepath.Join(root, "a", "b"), ""},
		{root, false, "./rel", filepath.Join(root, "rel"), ""},
		{root, false, "file://rel", filepath.Join(root, "rel"), ""},
		{root, false, filepath.Join(root, "x"), filepath.Join(root, "x"), ""},
		{root, false, "../x", "", refusedRelative},
		{root, false, "..", "", refusedRelative},
		{root, false, "a/../../x", "", refusedRelative},
		{root, false, "a/../b", "", refusedRelative},
		{root, false, "out/x", "", refusedRelative},
		{root, false, filepath.Join(dir, "x"), "", refusedAbsolute},
		{root, false, root + "/../x", "", refusedAbsolute},
		{"s3://bucket/saves", false, "rel", "s3://bucket/saves/rel", ""},
		{"s3://bucket/saves", false, "../x", "", refusedRelative},
		{"s3://bucket/saves", false, "s3://bucket/saves/x", "s3://bucket/saves/x", ""},
		{"s3://bucket/saves", false, "s3://bucket/other", "", refusedAbsolute},
		// allow-any-target lifts the rule for absolute targets only: a
		// relative name still goes under the key, never the working
		// directory.
		{root, true, "/elsewhere/x", "/elsewhere/x", ""},
		{root, true, "rel", filepath.Join(root, "rel"), ""},
		{"", true, "rel", "", "a relative name is taken under state.savepoints.dir, which is not set"},
		{"", false, "rel", "", "a relative name is taken under state.savepoints.dir, which is not set"},
		{"", false, "", "", "no target directory given"},
	} {
		got, code, msg := resolveSavepointTarget(tc.root, tc.allowAny, tc.raw)
		switch {
		case tc.want != "" && (got != tc.want || code != 0):
			t.Errorf("root %q allow-any %v target %q: %q %d %s, want %q", tc.root, tc.allowAny, tc.raw, got, code, msg, tc.want)
		case tc.want == "" && (code != 400 || !strings.Contains(msg, tc.msg) || !strings.Contains(msg, "state.savepoints.dir")):
			t.Errorf("root %q allow-any %v target %q: %q %d %q, want 400 with %q", tc.root, tc.allowAny, tc.raw, got, code, msg, tc.msg)
		}
	}
}
