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
// through the API and returns the folder to write into (see
// resolveSavepointTarget).
func (a *api) savepointTarget(raw string) (target string, code int, msg string) {
	return resolveSavepointTarget(a.cfg.SavepointsDir, a.cfg.AllowAnySavepointTarget, raw)
}

// resolveSavepointTarget resolves raw, a savepoint target as a client sent
// it, against root (state.savepoints.dir, "" if not set) on the serving
// process. Targets must lie under root: an empty target is root itself, a
// relative one is a name under it, resolved here and not in the client's
// working directory (which means nothing on a JobManager on another host:
// weir savepoint and weir stop send relative names as the user gave them),
// and an absolute one must name a folder under it. A relative name with
// ".." climbing out of root, an absolute path elsewhere or with "..", and
// one whose existing part leads out of root through a symbolic link are
// refused with 400 naming the key. allowAny
// (rest.savepoints.allow-any-target) lifts the check for absolute targets
// and URLs; a relative name still goes under root, and without a root is
// refused, since this process's working directory is nobody's choice.
// Without the check, whoever reaches the API could make the process write
// wherever it may write.
func resolveSavepointTarget(root string, allowAny bool, raw string) (target string, code int, msg string) {
	relative := raw != "" && !strings.Contains(raw, "://") && !filepath.IsAbs(raw) && !strings.HasPrefix(raw, "/")
	if relative && root == "" {
		return "", http.StatusBadRequest, "relative target " + quote(raw) + " refused: a relative name is taken under " + keySavepointsDir + ", which is not set; set it, or send an absolute folder"
	}
	if allowAny && raw != "" {
		if relative {
			return joinUnder(root, raw), 0, ""
		}
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
		if relative {
			return "", http.StatusBadRequest, "relative target " + quote(raw) + " refused: a relative name is taken under " + keySavepointsDir + " (" + root + ") and must stay inside it, without \"..\" and without a symbolic link out of it; give such a name, an absolute folder under it, or none (or set " + keyAllowAny + ": true)"
		}
		return "", http.StatusBadRequest, "target " + quote(raw) + " is outside " + keySavepointsDir + " (" + root + "); give a folder under it, a relative name (taken under it), or none (or set " + keyAllowAny + ": true)"
	}
	if strings.ContainsRune(raw, 0) || len(raw) > 4096 {
		return refuse()
	}
	if scheme, rest, ok := strings.Cut(root, "://"); ok && scheme != "file" {
		// Object storage: compare the cleaned paths, no links to follow.
		t := raw
		if relative {
			t = joinUnder(root, raw)
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

// joinUnder joins a relative name to root, a local folder or a URL.
func joinUnder(root, name string) string {
	if strings.Contains(root, "://") && !strings.HasPrefix(root, "file://") {
		return strings.TrimSuffix(root, "/") + "/" + name
	}
	return filepath.Join(strings.TrimPrefix(root, "file://"), name)
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
