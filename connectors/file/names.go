package file

import (
	"fmt"
	"strconv"
	"strings"
)

const (
	partPrefix       = "part-"
	inProgressSuffix = ".inprogress"
)

// checkUID accepts operator uids that make unambiguous, portable file names:
// letters, digits, '_', '-' and '.', not starting with '.'. Because a
// sequence number is all digits, "part-<uid>-<subtask>-<seq>" then parses
// back uniquely even when uids contain '-'.
func checkUID(uid string) error {
	if uid == "" {
		return fmt.Errorf("file sink: empty uid; give the sink operator a uid")
	}
	if uid[0] == '.' {
		return fmt.Errorf("file sink: uid %q starts with '.'; such part files would be hidden", uid)
	}
	for _, c := range uid {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '.':
		default:
			return fmt.Errorf("file sink: uid %q contains %q; use letters, digits, '_', '-' and '.'", uid, c)
		}
	}
	return nil
}

// subtaskPrefix is the common prefix of every part file of one subtask.
func subtaskPrefix(uid string, subtask int) string {
	return partPrefix + uid + "-" + strconv.Itoa(subtask) + "-"
}

// inProgressName is the hidden name of a transaction's file while it is
// written.
func inProgressName(name string) string {
	return "." + name + inProgressSuffix
}

// seqOf parses the sequence number of a file of the subtask with the given
// prefix: the visible name prefix+digits or the hidden
// "."+prefix+digits+".inprogress". ok is false for any other name.
func seqOf(prefix, name string) (seq uint64, inProgress, ok bool) {
	if strings.HasPrefix(name, ".") && strings.HasSuffix(name, inProgressSuffix) {
		name = strings.TrimSuffix(name[1:], inProgressSuffix)
		inProgress = true
	}
	digits, found := strings.CutPrefix(name, prefix)
	if !found || digits == "" {
		return 0, false, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false, false
		}
	}
	seq, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, false, false
	}
	return seq, inProgress, true
}

// checkTxnName refuses handle names that could escape the sink directory or
// that are not visible part file names; a handle comes from a checkpoint,
// which may be corrupt or foreign.
func checkTxnName(name string) error {
	if !strings.HasPrefix(name, partPrefix) || len(name) > 200 ||
		strings.ContainsAny(name, "/\\\x00") {
		return fmt.Errorf("file sink: transaction name %q is not a part file name (want part-<uid>-<subtask>-<seq>)", name)
	}
	return nil
}
