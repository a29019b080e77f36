package s3fs

import (
	"io/fs"
	"time"
)

// fileInfo describes an object (a file) or a prefix (a directory).
type fileInfo struct {
	name  string
	size  int64
	mtime time.Time
	dir   bool
}

var (
	_ fs.FileInfo = fileInfo{}
	_ fs.DirEntry = fileInfo{}
)

func dirInfo(name string) fileInfo { return fileInfo{name: name, dir: true} }

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) ModTime() time.Time { return i.mtime }
func (i fileInfo) IsDir() bool        { return i.dir }
func (i fileInfo) Sys() any           { return nil }

// Mode is a regular file's or a directory's; S3 has no permission bits, so
// these say "readable and writable with the credentials in use".
func (i fileInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}

// Type implements fs.DirEntry.
func (i fileInfo) Type() fs.FileMode { return i.Mode().Type() }

// Info implements fs.DirEntry.
func (i fileInfo) Info() (fs.FileInfo, error) { return i, nil }
