// Package s3test runs an in-process S3 server (gofakes3 with its memory
// backend) on a loopback httptest listener, for tests of S3 checkpoint
// storage in any package:
//
//	srv := s3test.Start(t, "ckpt")              // bucket "ckpt" exists
//	fsys := srv.FS(t)                           // an *s3fs.FS talking to it
//	dir := "s3://ckpt/jobs"                     // what a job is configured with
//
// The server checks the access key id of every request (not the
// signature), so tests can see a wrong key refused as S3 refuses it.
//
// Owns: the in-process S3 server of tests. Must not touch: production code
// paths.
package s3test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/vfs/s3fs"
)

// Credentials the server accepts.
const (
	AccessKey = "weir-test-key"
	SecretKey = "weir-test-secret"
	Region    = "us-east-1"
)

// Server is a running in-process S3 server.
type Server struct {
	// URL is the endpoint, http://127.0.0.1:port.
	URL string
	// Backend holds the objects; tests may inspect or alter it directly.
	Backend *s3mem.Backend

	down atomic.Bool
}

// SetDown makes the server unreachable (true) or reachable again: while
// down it drops every connection as it arrives, without an answer, as a
// server that crashed or a network that fails does. Objects are kept.
func (s *Server) SetDown(down bool) { s.down.Store(down) }

// Start runs a server with the given buckets until the test ends.
func Start(t testing.TB, buckets ...string) *Server {
	t.Helper()
	be := s3mem.New()
	for _, b := range buckets {
		if err := be.CreateBucket(b); err != nil {
			t.Fatalf("s3test: create bucket %s: %v", b, err)
		}
	}
	faker := gofakes3.New(be, gofakes3.WithLogger(gofakes3.DiscardLog()))
	s := &Server{Backend: be}
	api := checkAccessKey(faker.Server())
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.down.Load() {
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
					return
				}
			}
			panic(http.ErrAbortHandler)
		}
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	s.URL = hs.URL
	return s
}

// checkAccessKey refuses requests that are unsigned or signed with another
// access key id, with the answers S3 gives.
func checkAccessKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		switch {
		case auth == "" && r.URL.Query().Get("X-Amz-Credential") == "":
			s3Error(w, http.StatusForbidden, "AccessDenied", "Access Denied")
		case auth != "" && !strings.Contains(auth, "Credential="+AccessKey+"/"):
			s3Error(w, http.StatusForbidden, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")
		default:
			next.ServeHTTP(w, r)
		}
	})
}

func s3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, msg)
}

// Config returns a client configuration for the server.
func (s *Server) Config() s3fs.Config {
	return s3fs.Config{
		Endpoint: s.URL, Region: Region, AccessKey: AccessKey, SecretKey: SecretKey,
		PathStyle: true, MaxRetries: 1,
	}
}

// FS returns an FS talking to the server.
func (s *Server) FS(t testing.TB) *s3fs.FS {
	t.Helper()
	fsys, err := s3fs.New(s.Config())
	if err != nil {
		t.Fatalf("s3test: %v", err)
	}
	return fsys
}

// Settings returns the configuration keys that point a job at the server
// (pass them with Config.Set or -D).
func (s *Server) Settings() map[string]string {
	return map[string]string{
		config.S3Endpoint:  s.URL,
		config.S3Region:    Region,
		config.S3AccessKey: AccessKey,
		config.S3SecretKey: SecretKey,
		config.S3PathStyle: "true",
	}
}
