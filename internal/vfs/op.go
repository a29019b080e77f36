package vfs

import "fmt"

// Op names one kind of filesystem operation, for injecting errors into it
// and for recording it.
type Op uint8

// The operations of FS and File.
const (
	OpCreate Op = iota
	OpOpen
	OpStat
	OpReadDir
	OpMkdirAll
	OpRename
	OpRemove
	OpRemoveAll
	OpSyncDir
	OpRead
	OpWrite
	OpSync
	OpClose
	numOps
)

var opNames = [numOps]string{
	OpCreate:    "create",
	OpOpen:      "open",
	OpStat:      "stat",
	OpReadDir:   "readdir",
	OpMkdirAll:  "mkdirall",
	OpRename:    "rename",
	OpRemove:    "remove",
	OpRemoveAll: "removeall",
	OpSyncDir:   "syncdir",
	OpRead:      "read",
	OpWrite:     "write",
	OpSync:      "sync",
	OpClose:     "close",
}

// String returns the operation's lowercase name ("write", "syncdir").
func (o Op) String() string {
	if o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}
