package file

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ReadCommitted returns every line of every visible part file in dir, file
// by file in name order: what a downstream reader that ignores dot-files
// sees. It is meant for tests and for verifying a job's output.
func ReadCommitted(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, fmt.Errorf("read committed output: %w", err)
	}
	var lines []string
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), partPrefix) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read committed output: %w", err)
		}
		if len(b) == 0 {
			continue // an empty transaction, not one empty line
		}
		b = bytes.TrimSuffix(b, []byte{'\n'})
		for l := range bytes.SplitSeq(b, []byte{'\n'}) {
			lines = append(lines, string(l))
		}
	}
	return lines, nil
}
