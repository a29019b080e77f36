package vfs

import (
	"io"
	"io/fs"
)

// FS is the subset of filesystem operations weir's storage uses. Paths are
// OS paths (package filepath), not slash-separated io/fs paths.
type FS interface {
	// Create creates or truncates the named file for writing.
	Create(name string) (File, error)
	// Open opens the named file for reading.
	Open(name string) (File, error)
	// Stat describes the named file.
	Stat(name string) (fs.FileInfo, error)
	// ReadDir lists a directory, sorted by file name.
	ReadDir(name string) ([]fs.DirEntry, error)
	// MkdirAll creates a directory and any missing parents.
	MkdirAll(name string, perm fs.FileMode) error
	// Rename atomically replaces newname by oldname.
	Rename(oldname, newname string) error
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// RemoveAll removes a path and everything below it; a missing path is
	// not an error.
	RemoveAll(name string) error
	// SyncDir makes the entries of a directory (created, renamed and removed
	// names) durable.
	SyncDir(name string) error
}

// File is an open file.
type File interface {
	io.Reader
	io.Writer
	io.Closer
	// Sync flushes the file's contents to stable storage.
	Sync() error
}
