package file

import (
	"fmt"
	"os"
	"strings"
)

// refuseEarlierOutput fails if dir holds committed, non-empty part files of
// the sink uid: output of an earlier run. A sink that starts from scratch
// (its job restored no checkpoint) must not add to it, or the records that
// run committed would be committed a second time; a sink that restores a
// checkpoint of that run continues it and is not checked.
func refuseEarlierOutput(dir, uid string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("file sink %s: list %s: %w", uid, dir, err)
	}
	prefix := partPrefix + uid + "-"
	n := 0
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.Type().IsRegular() || !isSubtaskSeq(rest) {
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
