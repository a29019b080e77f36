package file

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// refuseEarlierOutput fails if dir holds committed, non-empty part files of
// the sink uid (of its subtask subtask only, if not negative): output of
// an earlier run. A sink that starts from scratch (its job restored no
// checkpoint) must not add to it, or the records that run committed would
// be committed a second time; a sink that restores a checkpoint of that
// run continues it and is not checked.
func refuseEarlierOutput(dir, uid string, subtask int) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("file sink %s: list %s: %w", uid, dir, err)
	}
	prefix := partPrefix + uid + "-"
	if subtask >= 0 {
		prefix += strconv.Itoa(subtask) + "-"
	}
	n := 0
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.Type().IsRegular() || (subtask < 0 && !isSubtaskSeq(rest)) || (subtask >= 0 && !allDigits(rest)) {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Size() > 0 {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	files := "part files"
	if n == 1 {
		files = "part file"
	}
	if subtask >= 0 {
		return fmt.Errorf("file sink %s: %s already holds committed output of its subtask %d from an earlier run (%d %s) and that subtask starts from scratch, not from a snapshot of that run (its snapshots are gone or did not verify): it would commit that output a second time; remove the folder, choose another one, or restore the subtask's snapshot", uid, dir, subtask, n, files)
	}
	return fmt.Errorf("file sink %s: %s already holds committed output of an earlier run (%d %s of this sink) and this run starts from scratch, not from a checkpoint of that run: it would commit that output a second time; remove the folder, choose another one, or start from a checkpoint or savepoint of the earlier run", uid, dir, n, files)
}

// isSubtaskSeq reports whether s is "<subtask>-<seq>", both decimal.
func isSubtaskSeq(s string) bool {
	sub, seq, ok := strings.Cut(s, "-")
	return ok && allDigits(sub) && allDigits(seq)
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
