package file

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// ReadCommitted orders part files by subtask and sequence number as
// numbers (part-files-0-10 after part-files-0-9), so that a changelog is
// applied in commit order; hidden in-progress files are not read.
func TestReadCommittedCommitOrder(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"part-files-0-10":             "+U,a,2\n",
		"part-files-0-9":              "+I,a,1\n-U,a,1\n",
		"part-files-1-2":              "+I,b,1\n",
		"part-files-0-11":             "",
		".part-files-0-12.inprogress": "-U,a,2\n",
		"part-my-sink-0-3":            "x\n",
		"part-files-1-1":              "+I,c,1\n",
		"not-a-part":                  "y\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadCommitted(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"+I,a,1", "-U,a,1", "+U,a,2", "+I,c,1", "+I,b,1", "x"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
