package rest

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// Configuration keys the savepoint targets are checked against; the
// caller reads them and sets Config.SavepointsDir and
// Config.AllowAnySavepointTarget.
const (
	keySavepointsDir = "state.savepoints.dir"
	keyAllowAny      = "rest.savepoints.allow-any-target"
)

// savepointTarget checks the target folder of a savepoint requested
// through the API and returns the folder to write into. Targets must lie
// under Config.SavepointsDir (state.savepoints.dir): an empty target is
// that folder, a relative one is taken under it, and an absolute one, one
// with "..", or one whose existing part leads out of it through a
// symbolic link is refused with 400 naming the key, unless
// Config.AllowAnySavepointTarget. Without the check, whoever reaches the
// API could make the process write wherever it may write.
func (a *api) savepointTarget(raw string) (target string, code int, msg string) {
	root := a.cfg.SavepointsDir
	if a.cfg.AllowAnySavepointTarget && raw != "" {
		return raw, 0, ""
	}
	if root == "" {
		if raw == "" {
			return "", http.StatusBadRequest, "no target directory given and " + keySavepointsDir + " is not set: send one or set " + keySavepointsDir
		}
		return "", http.StatusBadRequest, "target " + quote(raw) + " refused: savepoints requested through the REST API go under " + keySavepointsDir + ", which is not set; set it (or " + keyAllowAny + ": true to allow any folder)"
	}
	if raw == "" {
		return root, 0, ""
	}
	refuse := func() (string, int, string) {
		return "", http.StatusBadRequest, "target " + quote(raw) + " is outside " + keySavepointsDir + " (" + root + "); give a folder under it, a relative name, or none (or set " + keyAllowAny + ": true)"
	}
	if strings.ContainsRune(raw, 0) || len(raw) > 4096 {
		return refuse()
	}
	if scheme, rest, ok := strings.Cut(root, "://"); ok && scheme != "file" {
		// Object storage: compare the cleaned paths, no links to follow.
		t := raw
		if !strings.Contains(raw, "://") {
			t = strings.TrimSuffix(root, "/") + "/" + raw
		}
		ts, trest, ok := strings.Cut(t, "://")
		if !ok || ts != scheme || hasDotDot(trest) {
			return refuse()
		}
		r, tr := path.Clean("/"+rest), path.Clean("/"+trest)
		if tr != r && !strings.HasPrefix(tr, strings.TrimSuffix(r, "/")+"/") {
			return refuse()
		}
		return t, 0, ""
	}
	root = strings.TrimPrefix(root, "file://")
	t := strings.TrimPrefix(raw, "file://")
	if strings.Contains(t, "://") {
		return refuse()
	}
	if !filepath.IsAbs(t) {
		t = filepath.Join(root, t)
	}
	if hasDotDot(filepath.ToSlash(raw)) {
		return refuse()
	}
	t = filepath.Clean(t)
	rr, tr := resolve(root), resolve(t)
	rel, err := filepath.Rel(rr, tr)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return refuse()
	}
	return t, 0, ""
}

// hasDotDot reports whether a slash-separated path has a ".." element.
func hasDotDot(p string) bool {
	for _, e := range strings.Split(p, "/") {
		if e == ".." {
			return true
		}
	}
	return false
}

// resolve follows the symbolic links of p's longest existing prefix and
// appends the rest: where a folder created at p would really be.
func resolve(p string) string {
	p = filepath.Clean(p)
	var rest []string
	for {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, os.ErrNotExist) {
			// Unreadable: compare as written (a later write fails anyway).
			return filepath.Join(append([]string{p}, rest...)...)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(append([]string{p}, rest...)...)
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}

// quote quotes a target for an error message, shortened if long.
func quote(s string) string {
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strconv.Quote(s)
}
