package s3fs_test

import (
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/vfs/s3fs"
)

func TestPathOf(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{in: "s3://bkt", want: "/bkt"},
		{in: "s3://bkt/", want: "/bkt"},
		{in: "S3://bkt/a//b/", want: "/bkt/a/b"},
		{in: "s3://bkt/a/./b", want: "/bkt/a/b"},
		{in: "s3:///a", err: "names no bucket"},
		{in: "s3://Bad_Bucket/a", err: "bucket name"},
		{in: "s3://bkt/a/../../x", err: `contains ".."`},
		{in: "/tmp/x", err: "not an s3:// URL"},
	} {
		got, err := s3fs.PathOf(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("PathOf(%q) = %q, %v; want error containing %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("PathOf(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		case tc.err == "" && s3fs.URLOf(got) != "s3://"+strings.TrimPrefix(tc.want, "/"):
			t.Errorf("URLOf(%q) = %q", got, s3fs.URLOf(got))
		}
	}
	var p s3fs.Paths
	if _, err := p.StoragePath("/local/savepoints"); err == nil || !strings.Contains(err.Error(), "s3://bucket/savepoints") {
		t.Errorf("a local savepoint target for S3 storage: %v", err)
	}
	if got, err := p.StoragePath("s3://bkt/sp"); err != nil || p.Location(got) != "s3://bkt/sp" {
		t.Errorf("round trip: %q %v", got, err)
	}
}
