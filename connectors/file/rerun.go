package file

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// refuseEarlierOutput fails if dir holds committed, non-empty part files of
// the sink uid that subtask (of parallelism subtasks) must not add to:
// output of an earlier run. A sink that starts from scratch (it restored
// no checkpoint or snapshot) must not add to it, or the records that run
// committed would be committed a second time; a sink that restores one
// continues that run and is not checked.
//
// Each subtask checks its own subtask's files: it checks before it can
// commit, so what it finds is an earlier run's. On the job's first
// execution (firstRun) it also checks the files of subtasks at or above
// parallelism, which no subtask of this run writes; together the
// subtasks check every file. No subtask checks another running subtask's
// files, because that subtask may already have committed: in
// WEAKLY_CONSISTENT mode a subtask commits on its own snapshot, which can
// complete before a slower subtask of the same run opens.
func refuseEarlierOutput(dir, uid string, subtask, parallelism int, firstRun bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("file sink %s: list %s: %w", uid, dir, err)
	}
	prefix := partPrefix + uid + "-"
	n := 0
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		sub, ok := subtaskOf(rest)
		if !ok || sub != subtask && !(firstRun && sub >= parallelism) {
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
	if !firstRun {
		return fmt.Errorf("file sink %s: %s already holds committed output of its subtask %d from an earlier run (%d %s) and that subtask starts from scratch, not from a snapshot of that run (its snapshots are gone or did not verify): it would commit that output a second time; remove the folder, choose another one, or restore the subtask's snapshot", uid, dir, subtask, n, files)
	}
	return fmt.Errorf("file sink %s: %s already holds committed output of an earlier run (%d %s of this sink) and this run starts from scratch, not from a checkpoint of that run: it would commit that output a second time; remove the folder, choose another one, or start from a checkpoint or savepoint of the earlier run", uid, dir, n, files)
}

// subtaskOf returns the subtask of a part file's name after its
// "part-<uid>-" prefix: "<subtask>-<seq>", both decimal.
func subtaskOf(s string) (int, bool) {
	sub, seq, ok := strings.Cut(s, "-")
	if !ok || !allDigits(sub) || !allDigits(seq) {
		return 0, false
	}
	n, err := strconv.Atoi(sub)
	return n, err == nil
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
