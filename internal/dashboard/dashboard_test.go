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
