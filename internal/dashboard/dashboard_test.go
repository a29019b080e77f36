package dashboard_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/dashboard"
	"github.com/weirstream/weir/internal/rest"
)

// The handler serves the page at / and the assets under /ui/, with the
// right content types, and nothing else.
func TestHandler(t *testing.T) {
	srv := httptest.NewServer(dashboard.Handler())
	defer srv.Close()
	for _, c := range []struct {
		path, ctype, contains string
		code                  int
	}{
		{"/", "text/html", `<script type="module" src="/ui/app.js">`, 200},
		{"/ui/app.js", "text/javascript", "hashchange", 200},
		{"/ui/dom.js", "text/javascript", "createTextNode", 200},
		{"/ui/style.css", "text/css", "@media", 200},
		{"/ui/nope.js", "", "", 404},
		{"/elsewhere", "", "", 404},
	} {
		resp, err := http.Get(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("GET %s: %d, want %d", c.path, resp.StatusCode, c.code)
			continue
		}
		if c.code != 200 {
			continue
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, c.ctype) {
			t.Errorf("GET %s: Content-Type %q, want %s", c.path, ct, c.ctype)
		}
		if !strings.Contains(string(b), c.contains) {
			t.Errorf("GET %s: body lacks %q", c.path, c.contains)
		}
	}
}

// The assets load nothing from elsewhere (no CDN) and never parse server
// strings as markup: no innerHTML, outerHTML, insertAdjacentHTML or
// document.write anywhere.
func TestAssetsSelfContained(t *testing.T) {
	files, err := filepath.Glob("assets/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("assets: %v %v", files, err)
	}
	markup := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function`)
	remote := regexp.MustCompile(`(src|href)\s*=\s*["']?(https?:)?//|@import|url\(\s*["']?https?:`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := markup.Find(b); m != nil {
			t.Errorf("%s uses %s: build nodes with dom.js instead", f, m)
		}
		if m := remote.Find(b); m != nil {
			t.Errorf("%s loads from another origin (%s): embed it instead", f, m)
		}
	}
}

// The REST API serves the dashboard at / and /ui/ when rest.Config.UI is
// set; its own paths and errors are unchanged, and without UI / is the
// API's JSON 404.
func TestServedByREST(t *testing.T) {
	none := func() []rest.Job { return nil }
	with := httptest.NewServer(rest.NewHandler(rest.Config{Jobs: none, UI: dashboard.Handler()}))
	defer with.Close()
	without := httptest.NewServer(rest.NewHandler(rest.Config{Jobs: none}))
	defer without.Close()
	for _, c := range []struct {
		srv            *httptest.Server
		method, path   string
		code           int
		ctype, contain string
	}{
		{with, "GET", "/", 200, "text/html", "/ui/app.js"},
		{with, "GET", "/ui/graph.js", 200, "text/javascript", "export function graph"},
		{with, "GET", "/overview", 200, "application/json", "jobs-running"},
		{with, "POST", "/", 405, "application/json", "errors"},
		{with, "GET", "/nope", 404, "application/json", "errors"},
		{without, "GET", "/", 404, "application/json", "errors"},
		{without, "GET", "/ui/app.js", 404, "application/json", "errors"},
	} {
		req, _ := http.NewRequest(c.method, c.srv.URL+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		name := "with UI"
		if c.srv == without {
			name = "without UI"
		}
		if resp.StatusCode != c.code || !strings.HasPrefix(resp.Header.Get("Content-Type"), c.ctype) || !strings.Contains(string(b), c.contain) {
			t.Errorf("%s: %s %s: %d %q %.80q; want %d %s containing %q", name, c.method, c.path, resp.StatusCode, resp.Header.Get("Content-Type"), b, c.code, c.ctype, c.contain)
		}
	}
}
