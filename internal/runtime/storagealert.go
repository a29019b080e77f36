package runtime

import (
	"strings"
	"syscall"
	"time"

	"github.com/weirstream/weir/internal/jobmaster"
)

// storageAlert logs that checkpoint storage fails, once per alert the
// coordinator emits (the first failure, then at most every 30 s, with the
// count since): the storage, the error, the free space of a local
// folder, and what happens next. The job keeps running; no task restarts.
func (jm *JobMaster) storageAlert(a jobmaster.StorageAlert) {
	loc := jm.display(jm.store.JobDir())
	args := []any{"storage", loc, "error", a.Reason, "failed_checkpoints", a.Failures, "since_last_alert", a.Recent,
		"failing_for", jm.cfg.Now().Sub(a.Since).Round(time.Second), "next_attempt_in", a.NextRetry}
	if free, total, ok := freeSpace(jm.store.JobDir()); ok {
		args = append(args, "free_bytes", free, "total_bytes", total)
	}
	if a.GiveUpIn > 0 {
		args = append(args, "job_fails_in", a.GiveUpIn.Round(time.Second))
	}
	jm.log.Warn("checkpoint storage failing: checkpoints back off and the job keeps running (no restart can fix storage); free space or fix the storage, or the job fails after execution.checkpointing.storage-failure-timeout", args...)
}

// freeSpace returns the bytes free for an unprivileged writer and the
// size of the filesystem holding dir (or its nearest existing parent);
// ok is false for storage that is not a local folder.
func freeSpace(dir string) (free, total uint64, ok bool) {
	if strings.Contains(dir, "://") {
		return 0, 0, false
	}
	for d := dir; d != ""; {
		var st syscall.Statfs_t
		if err := syscall.Statfs(d, &st); err == nil {
			return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), true
		}
		i := strings.LastIndexByte(d, '/')
		if i <= 0 {
			break
		}
		d = d[:i]
	}
	return 0, 0, false
}
