package plan

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/vfs"
	"github.com/weirstream/weir/internal/vfs/s3fs"
)

// probeTimeout bounds the start-up check of S3 storage, so that an
// endpoint that swallows packets fails the job instead of hanging it.
const probeTimeout = 30 * time.Second

// checkpointDirScheme checks the scheme of state.checkpoints.dir: a local
// folder, file:// or s3://. It returns dir without file://.
func checkpointDirScheme(dir string) (string, error) {
	dir = strings.TrimPrefix(dir, "file://")
	if s3fs.IsURL(dir) {
		return dir, nil
	}
	if i := strings.Index(dir, "://"); i > 0 {
		return "", fmt.Errorf("%s %q: scheme %q is not supported; use a local folder, a file:// path or an s3://bucket/prefix URL", config.CheckpointsDir, dir, dir[:i])
	}
	return dir, nil
}

// resolveStorage points jc at S3 when state.checkpoints.dir is an s3://
// URL: checkpoint storage then runs on an s3fs.FS (or on the filesystem a
// test set as Plan.CheckpointFS, which wraps one), rooted at /bucket/prefix,
// after a probe that fails now — naming the endpoint, the credentials or
// the bucket — rather than at the first checkpoint. --from and savepoint
// targets may then be s3:// URLs too (see storageLocations).
func (p *Plan) resolveStorage(ctx context.Context, jc *runtime.JobConfig) error {
	locs := &storageLocations{cfg: p.Config, getenv: os.Getenv}
	if s3fs.IsURL(jc.CheckpointDir) {
		root, err := s3fs.PathOf(jc.CheckpointDir)
		if err != nil {
			return fmt.Errorf("%s: %w", config.CheckpointsDir, err)
		}
		fsys := p.CheckpointFS
		if fsys == nil {
			s3, err := locs.s3FS()
			if err != nil {
				return err
			}
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			err = s3.Probe(pctx, root)
			cancel()
			if err != nil {
				return fmt.Errorf("%s: %w", config.CheckpointsDir, err)
			}
			fsys = s3
		}
		locs.onS3, locs.storageFS = true, fsys
		jc.CheckpointDir, jc.StorageFS = root, fsys
	}
	jc.Locations = locs
	return nil
}

// storageLocations implements runtime.Locations for jobs that touch S3.
type storageLocations struct {
	cfg       *config.Config
	getenv    func(string) string
	onS3      bool   // checkpoint storage is on S3
	storageFS vfs.FS // its filesystem, when onS3

	once sync.Once
	s3   *s3fs.FS
	err  error
}

// s3FS builds the S3 client from the configuration once.
func (l *storageLocations) s3FS() (*s3fs.FS, error) {
	l.once.Do(func() {
		cfg, err := s3fs.ConfigFrom(l.cfg, l.getenv)
		if err == nil {
			l.s3, err = s3fs.New(cfg)
		}
		if err != nil {
			l.err = fmt.Errorf("s3 configuration: %w", err)
		}
	})
	return l.s3, l.err
}

// RestoreSource implements runtime.Locations: an s3:// URL is read through
// S3 (the storage's own filesystem when checkpoints are on S3), anything
// else from the local filesystem.
func (l *storageLocations) RestoreSource(ctx context.Context, loc string) (vfs.FS, string, error) {
	if !s3fs.IsURL(loc) {
		return vfs.OS{}, strings.TrimPrefix(loc, "file://"), nil
	}
	p, err := s3fs.PathOf(loc)
	if err != nil {
		return nil, "", err
	}
	if l.onS3 {
		return l.storageFS, p, nil
	}
	s3, err := l.s3FS()
	if err != nil {
		return nil, "", err
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if err := s3.Probe(pctx, p); err != nil {
		return nil, "", err
	}
	return s3, p, nil
}

// SavepointPath implements runtime.Locations. A savepoint is copied on the
// storage's own filesystem: s3:// targets for S3 storage, local folders
// for local storage.
func (l *storageLocations) SavepointPath(target string) (string, error) {
	if l.onS3 {
		return s3fs.Paths{}.StoragePath(target)
	}
	if s3fs.IsURL(target) {
		return "", fmt.Errorf("%q: checkpoint storage is a local folder, so savepoints are written to local folders; give a local --target, or put %s on s3://", target, config.CheckpointsDir)
	}
	return strings.TrimPrefix(target, "file://"), nil
}

// Display implements runtime.Locations.
func (l *storageLocations) Display(path string) string {
	if l.onS3 {
		return s3fs.URLOf(path)
	}
	return path
}
