package file

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// refuseEarlierOutput refuses exactly the committed, non-empty part files
// of its own uid (and subtask, if given): not in-progress files, empty
// transactions, other sinks' or subtasks' files or foreign names.
func TestRefuseEarlierOutput(t *testing.T) {
	write := func(dir, name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	write(dir, ".part-files-0-3.inprogress", "1\n")
	write(dir, "part-files-1-0", "")
	write(dir, "part-other-0-0", "1\n")
	write(dir, "part-files-x-0", "1\n")
	write(dir, "notes.txt", "1\n")
	if err := refuseEarlierOutput(dir, "files", -1); err != nil {
		t.Fatalf("nothing of uid files is committed, yet: %v", err)
	}
	write(dir, "part-files-1-4", "a\nb\n")
	write(dir, "part-files-0-2", "c\n")
	err := refuseEarlierOutput(dir, "files", -1)
	if err == nil {
		t.Fatal("two committed part files of uid files were not refused")
	}
	for _, w := range []string{dir, "2 part files", "remove the folder"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not name %q", err, w)
		}
	}
	if err := refuseEarlierOutput(dir, "other-0", -1); err != nil {
		t.Errorf("uid other-0 has no files (part-other-0-0 is uid other): %v", err)
	}
	// One subtask: its own committed files only.
	if err := refuseEarlierOutput(dir, "files", 2); err != nil {
		t.Errorf("subtask 2 of uid files has no files: %v", err)
	}
	err = refuseEarlierOutput(dir, "files", 1)
	if err == nil || !strings.Contains(err.Error(), "committed output of its subtask 1 from an earlier run (1 part file)") {
		t.Errorf("subtask 1's committed part file: %v, want its refusal", err)
	}
	write(dir, "part-files-10-0", "d\n")
	if err := refuseEarlierOutput(dir, "files", 2); err != nil {
		t.Errorf("subtask 2 of uid files has no files (part-files-10-0 is subtask 10's): %v", err)
	}
}
