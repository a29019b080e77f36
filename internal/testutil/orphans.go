package testutil

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
)

// CheckpointOrphans describes what a job's checkpoint folder (jobDir, the
// one holding its chk-N folders and the shared area) keeps that nothing
// needs, "" when nothing: a chk-N folder without _metadata (a checkpoint
// that never completed and was not cleaned up), more completed
// checkpoints than retained (num-retained), or a shared area (incremental
// checkpoints) that differs from the files the completed checkpoints
// reference (a leaked upload, or a referenced file gone). err is for a
// folder or metadata that cannot be read.
func CheckpointOrphans(jobDir string, retained int) (string, error) {
	ents, err := os.ReadDir(jobDir)
	if err != nil {
		return "", fmt.Errorf("list checkpoint folder %s: %w", jobDir, err)
	}
	var problems, completed []string
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "chk-") {
			continue
		}
		p := filepath.Join(jobDir, e.Name())
		if _, err := os.Stat(filepath.Join(p, "_metadata")); err != nil {
			problems = append(problems, fmt.Sprintf("%s has no _metadata", p))
			continue
		}
		completed = append(completed, p)
	}
	if len(completed) > retained {
		problems = append(problems, fmt.Sprintf("%d completed checkpoints kept, num-retained is %d: %v", len(completed), retained, completed))
	}
	diff, err := SharedAreaDiff(jobDir, completed)
	if err != nil {
		return "", err
	}
	if diff != "" {
		problems = append(problems, diff)
	}
	return strings.Join(problems, "; "), nil
}

// SharedAreaDiff compares jobDir's shared area with the files the
// checkpoints chks (paths of chk-N folders) reference: "" when it holds
// exactly those (no shared area counts as empty).
func SharedAreaDiff(jobDir string, chks []string) (string, error) {
	want := map[string]bool{}
	for _, c := range chks {
		md, _, err := storage.LoadPath(context.Background(), c)
		if err != nil {
			return "", fmt.Errorf("load checkpoint %s: %w", c, err)
		}
		for _, r := range md.SharedRefs() {
			want[r.Name] = true
		}
	}
	ents, err := os.ReadDir(filepath.Join(jobDir, checkpoint.SharedDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("list shared area of %s: %w", jobDir, err)
	}
	var got, w []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	for n := range want {
		w = append(w, n)
	}
	slices.Sort(got)
	slices.Sort(w)
	if slices.Equal(got, w) {
		return "", nil
	}
	var extra, missing []string
	for _, n := range got {
		if !want[n] {
			desc := n
			if fi, err := os.Stat(filepath.Join(jobDir, checkpoint.SharedDir, n)); err == nil {
				desc = fmt.Sprintf("%s (%d bytes, written %s)", n, fi.Size(), fi.ModTime().UTC().Format("15:04:05.000"))
			}
			extra = append(extra, desc)
		}
	}
	for _, n := range w {
		if !slices.Contains(got, n) {
			missing = append(missing, n)
		}
	}
	return fmt.Sprintf("shared area of %s holds %d files, the completed checkpoints %v reference %d: unreferenced %v, missing %v", jobDir, len(got), chkNames(chks), len(w), extra, missing), nil
}

func chkNames(chks []string) []string {
	out := make([]string, len(chks))
	for i, c := range chks {
		out[i] = filepath.Base(c)
	}
	return out
}
