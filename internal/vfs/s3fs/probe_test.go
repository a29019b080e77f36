package s3fs_test

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/vfs/s3fs"
	"github.com/weirstream/weir/internal/vfs/s3fs/s3test"
)

// Each way an S3 location can be unusable fails the probe with a message
// that names the thing and the fix.
func TestProbe(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	ctx := context.Background()
	if err := srv.FS(t).Probe(ctx, "/bkt/jobs"); err != nil {
		t.Fatalf("good location: %v", err)
	}

	err := srv.FS(t).Probe(ctx, "/nobucket/jobs")
	wantMsg(t, "missing bucket", err, `bucket "nobucket" does not exist`, "create it", "s3://nobucket/jobs")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing bucket: not fs.ErrNotExist: %v", err)
	}

	cfg := srv.Config()
	cfg.AccessKey = "someone-else"
	bad, err := s3fs.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = bad.Probe(ctx, "/bkt/jobs")
	wantMsg(t, "bad credentials", err, "InvalidAccessKeyId", "s3.access-key or AWS_ACCESS_KEY_ID")
	if !errors.Is(err, fs.ErrPermission) {
		t.Errorf("bad credentials: not fs.ErrPermission: %v", err)
	}

	// A port nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg = srv.Config()
	cfg.Endpoint = "http://" + addr
	gone, err := s3fs.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = gone.Probe(ctx, "/bkt/jobs")
	wantMsg(t, "unreachable endpoint", err, "cannot reach http://"+addr, "check s3.endpoint or AWS_ENDPOINT_URL_S3")
}

func wantMsg(t *testing.T, what string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %q does not contain %q", what, err, p)
		}
	}
}
