package rest

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// KeyTokenFile is the configuration key of the REST API's bearer token
// file.
const KeyTokenFile = "security.rest.token-file"

// ReadTokenFile reads the REST API's token: the first line of the file at
// path (security.rest.token-file), without surrounding space. An empty
// token is an error: it would let every request in.
func ReadTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", KeyTokenFile, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var tok string
	if sc.Scan() {
		tok = strings.TrimSpace(sc.Text())
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("%s %s: %w", KeyTokenFile, path, err)
	}
	if tok == "" {
		return "", fmt.Errorf("%s %s: %w", KeyTokenFile, path, errors.New("the first line is empty; write the token there"))
	}
	return tok, nil
}

// openPaths answer without a token: probes of process health, which
// reveal nothing about jobs.
//
// The dashboard's page and assets (GET / and /ui/…) are open too: they are
// static files with no job data, and the page asks for the token once and
// sends it with every API call.
func openPath(p string) bool {
	return p == "/healthz" || p == "/readyz" || p == "/" || strings.HasPrefix(p, "/ui/")
}

// RequireToken wraps h so that every request but GET /healthz and
// /readyz must carry "Authorization: Bearer <token>"; others get 401 with
// a JSON error. The comparison takes the same time for every wrong token.
// An empty token returns h unchanged.
func RequireToken(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if openPath(r.URL.Path) {
			h.ServeHTTP(w, r)
			return
		}
		auth := r.Header.Get("Authorization")
		scheme, got, ok := strings.Cut(auth, " ")
		// Hashing both sides makes the compare constant-time whatever the
		// length of what was sent.
		sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
		if !ok || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="weir"`)
			msg := "missing or wrong token: send Authorization: Bearer <token>, the first line of the file " + KeyTokenFile + " names"
			writeJSON(w, http.StatusUnauthorized, ErrorResponse{Errors: []string{msg}})
			return
		}
		h.ServeHTTP(w, r)
	})
}
