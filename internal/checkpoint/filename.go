package checkpoint

import (
	"fmt"
	"hash/crc32"
)

// FileNamePart maps a name (an operator uid, a job name) to a file name
// component: every byte outside [A-Za-z0-9._-] becomes '_'. It is not
// injective ("k/1" and "k_1" give "k_1"); SubtaskFileName adds a hash.
func FileNamePart(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	return string(b)
}

// SubtaskFileName names a state file of one operator subtask in a
// checkpoint folder: "<uid part>-<crc32 of uid>-<subtask>.<ext>". The hash
// keeps two uids that map to one name part from writing one file.
func SubtaskFileName(uid string, subtask int, ext string) string {
	return fmt.Sprintf("%s-%08x-%d.%s", FileNamePart(uid), crc32.ChecksumIEEE([]byte(uid)), subtask, ext)
}
