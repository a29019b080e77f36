// Package dashboard is weir's web dashboard: a single-page app of plain
// ES modules and CSS, embedded in the binary (no CDN, no build step),
// that reads the REST API of internal/rest and refreshes every 2 s.
//
// The REST API serves it when rest.Config.UI is set:
//
//	rest.NewHandler(rest.Config{Jobs: …, UI: dashboard.Handler()})
//
// GET / answers the page and GET /ui/… its assets; everything else it
// shows comes from the JSON endpoints (docs/rest.md, "Dashboard").
//
// Owns: the dashboard's assets and the two paths above. Must not touch:
// the API's handlers; the page only calls the public endpoints, and
// degrades gracefully (hides a view) when one answers 404.
package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed assets
var assets embed.FS

// Prefix is the path the assets are served under.
const Prefix = "/ui/"

// Handler serves the dashboard: "/" answers index.html, Prefix+name the
// asset name; any other path is 404.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic("dashboard: " + err.Error()) // the embed pattern guarantees the folder
	}
	files := http.StripPrefix(Prefix, http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Assets change with the binary; revalidate so an upgrade shows.
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		switch {
		case r.URL.Path == "/":
			w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'")
			http.ServeFileFS(w, r, sub, "index.html")
		case len(r.URL.Path) > len(Prefix) && r.URL.Path[:len(Prefix)] == Prefix:
			files.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}
