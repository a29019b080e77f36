package runtime

import (
	"context"
	"fmt"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/vfs"
)

// Locations maps between the locations users give and see — local paths,
// s3:// URLs — and the filesystem paths checkpoint storage works with, for
// storage that is not the local filesystem. JobConfig.Locations nil means
// every location is a local path.
type Locations interface {
	// RestoreSource returns the filesystem and path of a checkpoint or
	// savepoint to restore from (--from).
	RestoreSource(ctx context.Context, loc string) (vfs.FS, string, error)
	// SavepointPath maps a savepoint target to a path on StorageFS, or
	// says why the target cannot be written from this storage.
	SavepointPath(target string) (string, error)
	// Display returns how users see a path on StorageFS, in a form they
	// can pass back (--from, inspect).
	Display(path string) string
}

// display shows a path on checkpoint storage as users know it.
func (jm *JobMaster) display(path string) string {
	if jm.cfg.Locations == nil {
		return path
	}
	return jm.cfg.Locations.Display(path)
}

// checkpointLocation is where checkpoint id of this job is, as users know
// it.
func (jm *JobMaster) checkpointLocation(id checkpoint.ID) string {
	return fmt.Sprintf("%s/chk-%d", jm.display(jm.store.JobDir()), id)
}

// loadFrom loads the checkpoint or savepoint at loc (--from).
func (jm *JobMaster) loadFrom(ctx context.Context, loc string) (*checkpoint.Metadata, *storage.FS, error) {
	if jm.cfg.Locations == nil {
		return storage.LoadPath(ctx, loc)
	}
	fsys, p, err := jm.cfg.Locations.RestoreSource(ctx, loc)
	if err != nil {
		return nil, nil, err
	}
	return storage.LoadPath(ctx, p, storage.WithFS(fsys))
}

// savepoint copies completed checkpoint id into a savepoint folder under
// target and returns that folder as users know it.
func (jm *JobMaster) savepoint(ctx context.Context, id checkpoint.ID, target string) (string, error) {
	if jm.cfg.Locations != nil {
		p, err := jm.cfg.Locations.SavepointPath(target)
		if err != nil {
			return "", fmt.Errorf("savepoint target: %w", err)
		}
		target = p
	}
	dir, err := jm.store.Savepoint(ctx, id, target)
	if err != nil {
		return "", err
	}
	return jm.display(dir), nil
}
