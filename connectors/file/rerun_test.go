package file

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// refuseEarlierOutput refuses exactly the committed, non-empty part files
// of its own uid and subtask, and on a first run those of subtasks at or
// above the parallelism: not in-progress files, empty transactions, other
// sinks' files, foreign names, or files of the run's other subtasks (which
// may have committed already).
func TestRefuseEarlierOutput(t *testing.T) {
	write := func(dir, name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	write(dir, ".part-files-0-3.inprogress", "1\n")
	write(dir, "part-files-0-0", "")
	write(dir, "part-other-0-0", "1\n")
	write(dir, "part-files-x-0", "1\n")
	write(dir, "notes.txt", "1\n")
	if err := refuseEarlierOutput(dir, "files", 0, 2, true); err != nil {
		t.Fatalf("nothing of uid files is committed, yet: %v", err)
	}
	write(dir, "part-files-0-4", "a\nb\n")
	write(dir, "part-files-0-2", "c\n")
	err := refuseEarlierOutput(dir, "files", 0, 2, true)
	if err == nil {
		t.Fatal("two committed part files of uid files, subtask 0, were not refused")
	}
	for _, w := range []string{dir, "earlier run (2 part files of this sink)", "remove the folder"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not name %q", err, w)
		}
	}
	if err := refuseEarlierOutput(dir, "other-0", 0, 2, true); err != nil {
		t.Errorf("uid other-0 has no files (part-other-0-0 is uid other): %v", err)
	}
	// Another subtask of the run may have committed before this one
	// opened: its files are its own to check.
	if err := refuseEarlierOutput(dir, "files", 1, 2, true); err != nil {
		t.Errorf("subtask 1 of 2 refused subtask 0's files: %v", err)
	}
	// A subtask this run does not have wrote them in an earlier run.
	write(dir, "part-files-3-0", "d\n")
	err = refuseEarlierOutput(dir, "files", 1, 2, true)
	if err == nil || !strings.Contains(err.Error(), "earlier run (1 part file of this sink)") {
		t.Errorf("subtask 3's file, parallelism 2: %v, want its refusal", err)
	}
	if err := refuseEarlierOutput(dir, "files", 1, 4, true); err != nil {
		t.Errorf("subtask 3 is a subtask of this run at parallelism 4: %v", err)
	}
	// A later attempt: its own committed files only.
	if err := refuseEarlierOutput(dir, "files", 1, 2, false); err != nil {
		t.Errorf("a later attempt of subtask 1 has no files: %v", err)
	}
	err = refuseEarlierOutput(dir, "files", 3, 4, false)
	if err == nil || !strings.Contains(err.Error(), "committed output of its subtask 3 from an earlier run (1 part file)") {
		t.Errorf("subtask 3's committed part file: %v, want its refusal", err)
	}
	write(dir, "part-files-10-0", "d\n")
	if err := refuseEarlierOutput(dir, "files", 1, 2, false); err != nil {
		t.Errorf("subtask 1 has no files (part-files-10-0 is subtask 10's): %v", err)
	}
}
