package runtime

import (
	"os"
	"path/filepath"

	"github.com/weirstream/weir/internal/state"
)

// LocalRecoveryJobDir is the folder under which the subtasks of job keep
// their newest completed checkpoint's files for local recovery
// (state.backend.local-recovery): <lsm dir, else the temp dir>/
// weir-local-recovery/<job>. Each keyed subtask has a folder of its own
// inside.
func LocalRecoveryJobDir(b state.BackendConfig, job string) string {
	parent := b.LSM.Dir
	if parent == "" {
		parent = os.TempDir()
	}
	return filepath.Join(parent, "weir-local-recovery", safeName(job))
}

// removeLocalRecovery deletes the job's local-recovery folder once the job
// finished: no attempt will restore from it again, and a later run of the
// job starts from a checkpoint whose files it downloads (or from nothing).
// After a failure or a cancel the folder stays, so that the job resumed on
// this machine reuses it.
func (jm *JobMaster) removeLocalRecovery() {
	b := jm.cfg.StateBackend
	if !b.LocalRecovery {
		return
	}
	dir := LocalRecoveryJobDir(b, jm.cfg.JobName)
	if err := os.RemoveAll(dir); err != nil {
		jm.log.Warn("remove the finished job's local-recovery folder", "dir", dir, "err", err)
	}
}

// safeName maps a name to a file name component.
func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	return string(b)
}
