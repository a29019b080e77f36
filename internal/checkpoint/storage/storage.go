package storage

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/vfs"
)

const (
	chkPrefix    = "chk-"
	metadataName = "_metadata"
	metadataTmp  = "_metadata.tmp"
	probeName    = ".weir-write-probe"
	dirPerm      = 0o755
	// defaultBufferSize is the write buffer of a state file: big enough that
	// a state file costs few write syscalls, small enough for many in flight.
	defaultBufferSize = 64 << 10
)

// FS is the checkpoint storage of one job, rooted at <root>/<jobID>. Its
// methods are safe for concurrent use; it holds no mutable state.
type FS struct {
	fs       vfs.FS
	jobDir   string // absolute
	bufSize  int
	readOnly bool
}

// Option configures Open and LoadPath.
type Option func(*options)

type options struct {
	fs      vfs.FS
	bufSize int
}

// WithFS makes the storage use fsys instead of the operating system's
// filesystem; tests pass a vfs.WithErrors wrapper.
func WithFS(fsys vfs.FS) Option { return func(o *options) { o.fs = fsys } }

// WithBufferSize sets the write buffer size of state files (default 64 KiB;
// values below 1 keep the default).
func WithBufferSize(n int) Option { return func(o *options) { o.bufSize = n } }

func buildOptions(opts []Option) options {
	o := options{fs: vfs.OS{}, bufSize: defaultBufferSize}
	for _, opt := range opts {
		opt(&o)
	}
	if o.bufSize < 1 {
		o.bufSize = defaultBufferSize
	}
	return o
}

// Open returns the storage of job jobID under root, creating <root>/<jobID>
// and proving it writable by creating and removing a probe file, so that an
// unusable directory fails the job at start-up, not at its first checkpoint.
func Open(root, jobID string, opts ...Option) (*FS, error) {
	if jobID == "" || jobID == "." || jobID == ".." || strings.ContainsAny(jobID, `/\`) {
		return nil, fmt.Errorf("open checkpoint storage: job id %q is not a valid directory name; use a non-empty id without slashes", jobID)
	}
	if root == "" {
		return nil, errors.New("open checkpoint storage: state dir is empty; set --state-dir")
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("open checkpoint storage: resolve state dir %s: %w", root, err)
	}
	o := buildOptions(opts)
	s := &FS{fs: o.fs, jobDir: filepath.Join(absRoot, jobID), bufSize: o.bufSize}
	if err := s.probe(); err != nil {
		return nil, fmt.Errorf("state dir %s is not writable: %w; choose another --state-dir or fix its permissions", absRoot, err)
	}
	return s, nil
}

// probe creates the job directory, makes its entry durable and writes and
// removes a file in it.
func (s *FS) probe() error {
	if err := s.fs.MkdirAll(s.jobDir, dirPerm); err != nil {
		return err
	}
	if err := s.fs.SyncDir(filepath.Dir(s.jobDir)); err != nil {
		return err
	}
	// A name of its own: the JobManager and every TaskManager probe the
	// same folder at once, and one must not remove another's probe.
	var r [6]byte
	rand.Read(r[:])
	p := filepath.Join(s.jobDir, "."+hex.EncodeToString(r[:])+probeName)
	f, err := s.fs.Create(p)
	if err != nil {
		return err
	}
	_, werr := f.Write([]byte("weir"))
	cerr := f.Close()
	rerr := s.fs.Remove(p)
	return errors.Join(werr, cerr, rerr)
}

// Probe tests that the job's checkpoint folder takes a write: it writes
// and removes a small file there. The JobManager probes while checkpoint
// storage fails, to notice at once when it works again.
func (s *FS) Probe() error {
	if err := s.probe(); err != nil {
		return fmt.Errorf("probe checkpoint storage %s: %w", s.jobDir, err)
	}
	return nil
}

// JobDir returns the absolute directory of the job's checkpoints; StateFile
// paths are relative to it.
func (s *FS) JobDir() string { return s.jobDir }

// chkName is the directory name of checkpoint id, relative to the job dir.
func chkName(id checkpoint.ID) string { return chkPrefix + strconv.FormatInt(int64(id), 10) }

// chkDir is the absolute directory of checkpoint id.
func (s *FS) chkDir(id checkpoint.ID) string { return filepath.Join(s.jobDir, chkName(id)) }

// parseChkName returns the id of a "chk-<n>" name. Only the canonical decimal
// form counts, so "chk-07" can never shadow "chk-7".
func parseChkName(name string) (checkpoint.ID, bool) {
	digits, ok := strings.CutPrefix(name, chkPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != digits {
		return 0, false
	}
	return checkpoint.ID(n), true
}

// errReadOnly is returned by the writing methods of a LoadPath view.
func (s *FS) errReadOnly(what string) error {
	return fmt.Errorf("%s: checkpoint storage at %s is a read-only view for restoring; open the job's storage with Open to write", what, s.jobDir)
}
