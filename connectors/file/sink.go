package file

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/vfs"
)

// SinkOption configures a Sink; pass them to NewSink.
type SinkOption struct {
	apply func(*sinkConfig)
}

type sinkConfig struct {
	bufferSize int
}

// WithBufferSize sets the write buffer per open transaction (default 64 KiB).
// Values below 4 KiB are raised to 4 KiB.
func WithBufferSize(n int) SinkOption {
	return SinkOption{func(c *sinkConfig) { c.bufferSize = max(n, 4<<10) }}
}

// Sink is the transactional part of the exactly-once file sink for one sink
// subtask. It is not safe for concurrent use; the subtask's task loop owns
// it. See the package documentation for the protocol.
type Sink struct {
	dir     string
	uid     string
	subtask int
	prefix  string
	cfg     sinkConfig
	opened  bool
	closed  bool
	next    uint64
	open    map[string]*openTxn // by Txn.Name; begun and not yet pre-committed
	// created is the identity of each in-progress file this Sink created,
	// by Txn.Name, until it commits or aborts the transaction. Another
	// attempt of the subtask may remove the file at its Open and, since
	// names continue from what is on disk, a later attempt may create one
	// of the same name: Commit and Abort act on the file at that name only
	// if it is still the one this Sink created (see Abort).
	created map[string]os.FileInfo
}

type openTxn struct {
	f *os.File
	w *bufio.Writer
}

// NewSink returns the sink of subtask subtask of the operator uid, writing
// into dir, which is created if absent. It fails if dir cannot be created or
// written, or if uid would make ambiguous file names. Call Open before
// Begin.
func NewSink(dir string, uid string, subtask int, opts ...SinkOption) (*Sink, error) {
	if err := checkUID(uid); err != nil {
		return nil, err
	}
	if subtask < 0 {
		return nil, fmt.Errorf("file sink %s: negative subtask %d", uid, subtask)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("file sink %s: create directory %s: %w; check the path and its permissions", uid, dir, err)
	}
	if err := vfs.CheckWritableDir(dir); err != nil {
		return nil, fmt.Errorf("file sink %s: directory %s is not writable: %w; check its permissions", uid, dir, err)
	}
	cfg := sinkConfig{bufferSize: 64 << 10}
	for _, o := range opts {
		if o.apply != nil {
			o.apply(&cfg)
		}
	}
	return &Sink{
		dir:     dir,
		uid:     uid,
		subtask: subtask,
		prefix:  subtaskPrefix(uid, subtask),
		cfg:     cfg,
		open:    map[string]*openTxn{},
		created: map[string]os.FileInfo{},
	}, nil
}

// Open prepares the sink after a (re)start. restored are the handles of the
// checkpoint the job restores from, at least those the caller will commit
// (passing those it will abort too is fine). Open removes every in-progress file of this uid and subtask that is
// not among them: such a file belongs to a transaction no completed
// checkpoint covers. Sequence numbers then continue after the highest one
// found on disk or among restored, so new names never collide with them.
func (s *Sink) Open(restored []Txn) error {
	if s.closed {
		return fmt.Errorf("file sink %s/%d: open after close", s.uid, s.subtask)
	}
	if s.opened {
		return fmt.Errorf("file sink %s/%d: opened twice; create a new Sink per attempt", s.uid, s.subtask)
	}
	keep := make(map[string]bool, len(restored))
	var next uint64
	for _, t := range restored {
		keep[t.Name] = true
		next = max(next, t.Seq+1)
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("file sink %s/%d: list %s: %w", s.uid, s.subtask, s.dir, err)
	}
	removed := false
	for _, e := range entries {
		seq, inProgress, ok := seqOf(s.prefix, e.Name())
		if !ok {
			continue
		}
		next = max(next, seq+1)
		if !inProgress || keep[strings.TrimSuffix(e.Name()[1:], inProgressSuffix)] {
			continue
		}
		if err := os.Remove(filepath.Join(s.dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("file sink %s/%d: remove leftover %s: %w", s.uid, s.subtask, filepath.Join(s.dir, e.Name()), err)
		}
		removed = true
	}
	if removed {
		if err := syncDir(s.dir); err != nil {
			return fmt.Errorf("file sink %s/%d: %w", s.uid, s.subtask, err)
		}
	}
	s.next, s.opened = next, true
	return nil
}

// Begin starts a transaction: it creates its hidden in-progress file.
func (s *Sink) Begin() (Txn, error) {
	if !s.opened || s.closed {
		return Txn{}, fmt.Errorf("file sink %s/%d: begin before Open or after Close", s.uid, s.subtask)
	}
	t := Txn{Name: s.prefix + strconv.FormatUint(s.next, 10), Seq: s.next}
	path := filepath.Join(s.dir, inProgressName(t.Name))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		// Open chose the name after everything on disk, so another Sink
		// created it since: another attempt of this subtask that is still
		// running (declared dead but paused or partitioned: a zombie), or
		// a second job writing into the same directory.
		return Txn{}, fmt.Errorf("file sink %s/%d: begin %s: %s exists already, created by another attempt of this subtask since this one opened (an earlier attempt still running, or another job writing the same directory with the same uid); refusing to share it, the restart opens after it and removes it: %w", s.uid, s.subtask, t.Name, path, err)
	}
	if err != nil {
		return Txn{}, fmt.Errorf("file sink %s/%d: begin: create %s: %w", s.uid, s.subtask, path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		os.Remove(path)
		return Txn{}, fmt.Errorf("file sink %s/%d: begin: stat %s: %w", s.uid, s.subtask, path, err)
	}
	s.next++
	s.open[t.Name] = &openTxn{f: f, w: bufio.NewWriterSize(f, s.cfg.bufferSize)}
	s.created[t.Name] = fi
	return t, nil
}

// Write appends lines to txn's file, each followed by '\n'. The lines are
// copied into the buffer; the caller may reuse them. A line containing '\n'
// is refused, because it would come back as two lines.
func (s *Sink) Write(txn Txn, lines [][]byte) error {
	o := s.open[txn.Name]
	if o == nil {
		return fmt.Errorf("file sink %s/%d: write to %s: not open (not begun, already pre-committed, or aborted)", s.uid, s.subtask, txn.Name)
	}
	for _, l := range lines {
		if bytes.IndexByte(l, '\n') >= 0 {
			return fmt.Errorf("file sink %s/%d: write to %s: line %q contains a newline; split it first", s.uid, s.subtask, txn.Name, l)
		}
		o.w.Write(l) // a write error sticks in the bufio.Writer and surfaces at Flush
		o.w.WriteByte('\n')
	}
	return nil
}

// PreCommit makes txn durable but keeps it invisible: it flushes, fsyncs and
// closes the in-progress file and fsyncs the directory, so the file survives
// a machine crash once the checkpoint holding txn completes. Pre-committing
// a transaction that is already pre-committed (its file exists, closed) is a
// no-op.
func (s *Sink) PreCommit(txn Txn) error {
	path := filepath.Join(s.dir, inProgressName(txn.Name))
	o := s.open[txn.Name]
	if o == nil {
		if _, err := os.Lstat(path); err != nil {
			return fmt.Errorf("file sink %s/%d: pre-commit %s: %w", s.uid, s.subtask, txn.Name, err)
		}
		return nil
	}
	delete(s.open, txn.Name)
	err := o.w.Flush()
	if err == nil {
		err = o.f.Sync()
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(s.dir)
	}
	if err != nil {
		return fmt.Errorf("file sink %s/%d: pre-commit %s: %w", s.uid, s.subtask, path, err)
	}
	return nil
}

// Commit makes txn visible: it renames the in-progress file to the part file
// and fsyncs the directory. It is idempotent: if the part file exists and the
// in-progress one is gone, an earlier commit got there and Commit succeeds.
// If both are gone it fails with weir.ErrTransactionLost. Any Sink of the
// same directory may commit any handle, so after a rescale a subtask
// commits the handles it inherited.
func (s *Sink) Commit(txn Txn) error {
	if err := checkTxnName(txn.Name); err != nil {
		return err
	}
	if s.open[txn.Name] != nil {
		return fmt.Errorf("file sink %s/%d: commit %s: not pre-committed; call PreCommit at the barrier first", s.uid, s.subtask, txn.Name)
	}
	final := filepath.Join(s.dir, txn.Name)
	tmp := filepath.Join(s.dir, inProgressName(txn.Name))
	_, finalErr := os.Lstat(final)
	tmpInfo, tmpErr := os.Lstat(tmp)
	if mine, ok := s.created[txn.Name]; ok && tmpErr == nil && !os.SameFile(mine, tmpInfo) {
		return fmt.Errorf("file sink %s/%d: commit %s: %s is not the file this attempt wrote: a later attempt of this subtask removed that one when it opened and created its own under the name; this attempt is stale and publishes nothing", s.uid, s.subtask, txn.Name, tmp)
	}
	delete(s.created, txn.Name)
	switch {
	case finalErr == nil && tmpErr == nil:
		return fmt.Errorf("file sink %s/%d: commit %s: both %s and %s exist; a name was reused, inspect them by hand", s.uid, s.subtask, txn.Name, final, tmp)
	case finalErr == nil:
		// Committed before; the crash may have come before the directory
		// sync, so sync again.
	case errors.Is(tmpErr, fs.ErrNotExist) && errors.Is(finalErr, fs.ErrNotExist):
		// Its data is gone, and a silent success would hide the loss: the
		// directory was cleaned by hand, or the job restored a checkpoint
		// written for another directory.
		return fmt.Errorf("file sink %s/%d: commit %s: neither %s nor %s exists: %w", s.uid, s.subtask, txn.Name, tmp, final, weir.ErrTransactionLost)
	default:
		if err := os.Rename(tmp, final); err != nil {
			return fmt.Errorf("file sink %s/%d: commit %s: %w", s.uid, s.subtask, txn.Name, err)
		}
	}
	if err := syncDir(s.dir); err != nil {
		return fmt.Errorf("file sink %s/%d: commit %s: %w", s.uid, s.subtask, txn.Name, err)
	}
	return nil
}

// Abort discards txn: it closes its file if open and removes the in-progress
// file. It is idempotent; aborting a transaction whose file is already gone
// succeeds, unless the transaction was committed (weir.ErrAlreadyCommitted).
func (s *Sink) Abort(txn Txn) error {
	if err := checkTxnName(txn.Name); err != nil {
		return err
	}
	if o := s.open[txn.Name]; o != nil {
		delete(s.open, txn.Name)
		o.f.Close() // the data is discarded; a close error changes nothing
	}
	tmp := filepath.Join(s.dir, inProgressName(txn.Name))
	if mine, ok := s.created[txn.Name]; ok {
		delete(s.created, txn.Name)
		// This Sink created the file; if the one at the name now is not
		// it, a later attempt removed it at Open and created its own of the
		// same name, which is that attempt's to keep: a stale attempt (a
		// zombie) closing down must not remove it. A later attempt could
		// replace the file between this check and the remove only by
		// opening twice within that instant.
		if fi, err := os.Lstat(tmp); err == nil && !os.SameFile(mine, fi) {
			return nil
		}
	}
	err := os.Remove(tmp)
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("file sink %s/%d: abort %s: %w", s.uid, s.subtask, txn.Name, err)
	}
	if _, err := os.Lstat(filepath.Join(s.dir, txn.Name)); err == nil {
		// Aborting it cannot take its data back.
		return fmt.Errorf("file sink %s/%d: abort %s: %w", s.uid, s.subtask, txn.Name, weir.ErrAlreadyCommitted)
	}
	return nil
}

// Close closes the files of open transactions without committing or
// removing them: the caller aborts what it must first (the open
// transaction, whose data no checkpoint covers), and the next attempt's
// Open removes anything left over.
func (s *Sink) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for name, o := range s.open {
		if err := o.f.Close(); err != nil {
			errs = append(errs, fmt.Errorf("file sink %s/%d: close %s: %w", s.uid, s.subtask, name, err))
		}
	}
	clear(s.open)
	clear(s.created)
	return errors.Join(errs...)
}

// syncDir fsyncs a directory so that creates, renames and removes in it
// survive a machine crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
