package s3fs

import (
	"cmp"
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"syscall"

	"github.com/minio/minio-go/v7"
)

// ReadDir implements vfs.FS: one level of the prefix name + "/", listed
// with the "/" delimiter through as many pages as it takes. Objects are
// files, common prefixes directories; a directory marker object (a key
// ending in "/", as consoles create) is not an entry. Entries are sorted by
// name. A prefix with no objects lists as empty (S3 cannot tell an empty
// directory from a missing one); an object's own name is not a directory.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	bucket, key, err := split(name)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	if bucket == "" {
		return nil, &fs.PathError{Op: "readdir", Path: URLOf(name), Err: errors.New("listing buckets is not supported; name a bucket")}
	}
	prefix := ""
	if key != "" {
		prefix = key + "/"
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out []fs.DirEntry
	// Some servers repeat a common prefix on the page after the one that
	// ended inside it; seen keeps each directory once.
	seen := map[string]bool{}
	for obj := range f.client.ListObjectsIter(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, MaxKeys: f.pageSize}) {
		if obj.Err != nil {
			return nil, pathErr("readdir", name, bucket, obj.Err)
		}
		rel := strings.TrimPrefix(obj.Key, prefix)
		if dir, ok := strings.CutSuffix(rel, "/"); ok {
			if dir != "" && !seen[dir] {
				seen[dir] = true
				out = append(out, dirInfo(dir))
			}
			continue
		}
		out = append(out, fileInfo{name: rel, size: obj.Size, mtime: obj.LastModified})
	}
	if len(out) == 0 && key != "" {
		if _, err := f.client.StatObject(ctx, bucket, key, minio.StatObjectOptions{}); err == nil {
			return nil, &fs.PathError{Op: "readdir", Path: URLOf(name), Err: syscall.ENOTDIR}
		}
	}
	// S3 lists in key order, where "a-b" comes before the prefix "a/";
	// callers expect name order.
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return cmp.Compare(a.Name(), b.Name()) })
	return out, nil
}
