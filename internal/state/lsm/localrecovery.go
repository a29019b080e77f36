package lsm

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/weirstream/weir/internal/checkpoint"
)

// Local recovery (state.backend.local-recovery): after a checkpoint
// completes, its SSTs stay on local disk as hard links named by their
// shared names in Options.LocalRecoveryDir; a later restore on this
// machine links the files it finds there (after checking size and CRC32C)
// instead of downloading them. The store directory itself is never reused:
// it holds writes made after the checkpoint.

// keepLocal makes the recovery folder hold exactly the shared files of
// completed checkpoint id.
func (b *Backend[K]) keepLocal(id checkpoint.ID, refs []checkpoint.SharedFileRef) error {
	dir := b.opts.LocalRecoveryDir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("local recovery folder: %w", err)
	}
	keep := map[string]bool{}
	var errs []error
	for _, r := range refs {
		keep[r.Name] = true
		dst := filepath.Join(dir, r.Name)
		if _, err := os.Stat(dst); err == nil {
			continue
		}
		if err := linkOrCopy(filepath.Join(b.chkDir(id), r.Local), dst); err != nil {
			errs = append(errs, err)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, e := range ents {
		if !keep[e.Name()] {
			errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
		}
	}
	return errors.Join(errs...)
}

// linkLocal links the recovery copy of r to dst if there is one with the
// recorded size and checksum.
func (b *Backend[K]) linkLocal(r checkpoint.SharedFileRef, dst string) bool {
	if b.opts.LocalRecoveryDir == "" {
		return false
	}
	src := filepath.Join(b.opts.LocalRecoveryDir, r.Name)
	f, err := os.Open(src)
	if err != nil {
		return false
	}
	h := crc32.New(castagnoli)
	n, err := io.Copy(h, f)
	f.Close()
	if err != nil || n != r.Size || h.Sum32() != r.CRC32C {
		_ = os.Remove(src) // damaged: download instead
		return false
	}
	return linkOrCopy(src, dst) == nil
}

func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}
