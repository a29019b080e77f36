package postgres

import (
	"fmt"
	"strconv"
	"strings"
)

// Txn is the handle of one exactly-once sink transaction, what the
// two-phase-commit operator stores in checkpoints. GID is the id the
// transaction is prepared under, "<prefix>:<uid>:<subtask>:<seq>"; Seq is
// its sequence number within the subtask.
type Txn struct {
	GID string
	Seq uint64
}

// maxGIDLen is PostgreSQL's limit on a prepared transaction's id (GIDSIZE
// 200, terminating NUL included).
const maxGIDLen = 199

// sinkID is the part of every gid shared by all subtasks of one sink:
// "<prefix>:<uid>".
func sinkID(prefix, uid string) string { return prefix + ":" + uid }

// gidOf builds the id of transaction seq of a subtask.
func gidOf(sink string, subtask int, seq uint64) string {
	return sink + ":" + strconv.Itoa(subtask) + ":" + strconv.FormatUint(seq, 10)
}

// parseGID splits a gid of sink into its subtask and sequence number; ok is
// false for ids of other sinks or of any other shape. Prefix and uid hold no
// ':', so the split is unambiguous.
func parseGID(sink, gid string) (subtask int, seq uint64, ok bool) {
	rest, found := strings.CutPrefix(gid, sink+":")
	if !found {
		return 0, 0, false
	}
	sub, s, found := strings.Cut(rest, ":")
	if !found {
		return 0, 0, false
	}
	n, err := strconv.Atoi(sub)
	if err != nil || n < 0 || strconv.Itoa(n) != sub {
		return 0, 0, false
	}
	q, err := strconv.ParseUint(s, 10, 64)
	if err != nil || strconv.FormatUint(q, 10) != s {
		return 0, 0, false
	}
	return n, q, true
}

// checkSinkID refuses a prefix and uid that would make gids that do not
// parse back or do not fit PostgreSQL's limit with room for the subtask
// and a 20-digit sequence number.
func checkSinkID(prefix, uid string) error {
	if err := checkName("transaction prefix", prefix); err != nil {
		return err
	}
	if err := checkName("operator uid", uid); err != nil {
		return err
	}
	if n := len(sinkID(prefix, uid)) + len(":99999:18446744073709551615"); n > maxGIDLen {
		return fmt.Errorf("transaction prefix %q and uid %q make ids of up to %d bytes, over PostgreSQL's %d; shorten them", prefix, uid, n, maxGIDLen)
	}
	return nil
}
