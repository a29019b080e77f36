package file

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// ExpandGlob returns the regular files matching pattern (filepath.Match
// syntax), sorted by path, so that every attempt of a source sees the same
// order. Directories are skipped. No match is an error naming the pattern:
// a source with a mistyped path must not run and produce nothing.
func ExpandGlob(pattern string) ([]string, error) {
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("expand input glob %q: %w", pattern, err)
	}
	files := matches[:0]
	for _, m := range matches {
		fi, err := os.Stat(m)
		if err != nil {
			return nil, fmt.Errorf("expand input glob %q: %w", pattern, err)
		}
		if fi.Mode().IsRegular() {
			files = append(files, m)
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("expand input glob %q: no file matches; check the path", pattern)
	}
	slices.Sort(files)
	return files, nil
}
