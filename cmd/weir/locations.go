package main

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/vfs"
	"github.com/weirstream/weir/internal/vfs/s3fs"
)

// openLocation returns the filesystem and path of a checkpoint location
// given on the command line: an s3:// URL is reached with the s3.* keys of
// cfg and the AWS environment variables, after a probe that names what is
// wrong; anything else is a local path.
func openLocation(ctx context.Context, cfg *config.Config, loc string) (vfs.FS, string, error) {
	if !s3fs.IsURL(loc) {
		return vfs.OS{}, strings.TrimPrefix(loc, "file://"), nil
	}
	p, err := s3fs.PathOf(loc)
	if err != nil {
		return nil, "", err
	}
	c, err := s3fs.ConfigFrom(cfg, os.Getenv)
	if err != nil {
		return nil, "", err
	}
	fsys, err := s3fs.New(c)
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := fsys.Probe(ctx, p); err != nil {
		return nil, "", err
	}
	return fsys, p, nil
}
