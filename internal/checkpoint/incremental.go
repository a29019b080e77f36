package checkpoint

import (
	"strconv"
	"strings"
)

// SharedDir is the folder, relative to a job's checkpoint root, holding the
// files that incremental checkpoints share: <root>/<job>/shared/<name>.
const SharedDir = "shared"

// SharedFileRef references one immutable file in the job's shared area. The
// same name always denotes the same bytes: names are made unique per store,
// file and first upload (see internal/state/lsm), never reused. Size and
// CRC32C let a restore verify the file before it trusts it.
type SharedFileRef struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
	// Local is the file's name inside the store that wrote it (e.g.
	// "000123.sst"); a restore puts it back under this name.
	Local string `json:"local"`
}

// StateFile returns the reference as a state file path relative to the
// job's checkpoint root, so that storage reads and verifies it like any
// other state file.
func (r SharedFileRef) StateFile() StateFile {
	return StateFile{Path: SharedDir + "/" + r.Name, Size: r.Size, CRC32C: r.CRC32C}
}

// PrivateStoreFile is a small file of a store that belongs to one
// checkpoint only (MANIFEST, OPTIONS, markers), kept in chk-<n>/.
type PrivateStoreFile struct {
	Local string    `json:"local"`
	File  StateFile `json:"file"`
}

// StoreState is one entry of a store's state catalogue: the id under which
// a state's entries lie in the store's key layout.
type StoreState struct {
	Name string `json:"name"`
	Kind uint8  `json:"kind"`
	ID   uint16 `json:"id"`
}

// IncrementalKeyedStateHandle is the keyed state of one operator subtask as
// the files of its LSM store: every SST it needs in the shared area (those
// uploaded by this checkpoint and those uploaded earlier), the store's
// private files in the checkpoint's folder, and the timers in the canonical
// keyed format. Given the shared area the handle is self-contained.
type IncrementalKeyedStateHandle struct {
	// KeyGroupStart and KeyGroupEnd are the half-open key-group range of
	// the subtask that wrote the store; it holds no other key groups.
	KeyGroupStart int    `json:"kgStart"`
	KeyGroupEnd   int    `json:"kgEnd"`
	StoreID       string `json:"storeId"`
	// Shared lists every immutable file of the store.
	Shared  []SharedFileRef    `json:"shared"`
	Private []PrivateStoreFile `json:"private"`
	// States is the store's catalogue, so that stores can be merged on
	// rescale and inspected without the job's code.
	States []StoreState `json:"states,omitempty"`
	// Timers holds the subtask's timers in the canonical format (a keyed
	// state file with only the timers section); nil when there are none.
	Timers *KeyedStateHandle `json:"timers,omitempty"`
	// FullSize is the bytes of every file the handle references; the
	// checkpoint's own uploads are in UploadedSize.
	FullSize     int64 `json:"fullSize"`
	UploadedSize int64 `json:"uploadedSize"`
}

// Files lists every state file the handle references: shared, private and
// timers, in that order.
func (h *IncrementalKeyedStateHandle) Files() []StateFile {
	out := make([]StateFile, 0, len(h.Shared)+len(h.Private)+1)
	for _, r := range h.Shared {
		out = append(out, r.StateFile())
	}
	for _, p := range h.Private {
		out = append(out, p.File)
	}
	if h.Timers != nil {
		out = append(out, h.Timers.File)
	}
	return out
}

// SharedRefs lists the shared files a checkpoint references, once per
// name, in metadata order: the files of incremental keyed state and the
// transaction blobs in the shared area (whose Local is empty: no store
// puts them back). A savepoint's blobs lie in its own folder and are not
// listed.
func (m *Metadata) SharedRefs() []SharedFileRef {
	seen := map[string]bool{}
	var out []SharedFileRef
	add := func(r SharedFileRef) {
		if !seen[r.Name] {
			seen[r.Name] = true
			out = append(out, r)
		}
	}
	for _, op := range m.Operators {
		for _, st := range op.Subtasks {
			if h := st.State.Incremental; h != nil {
				for _, r := range h.Shared {
					add(r)
				}
			}
			for _, f := range st.State.Blobs {
				if name, ok := strings.CutPrefix(f.Path, SharedDir+"/"); ok {
					add(SharedFileRef{Name: name, Size: f.Size, CRC32C: f.CRC32C})
				}
			}
		}
	}
	return out
}

// blobPrefix starts the name of every transaction blob. A store id is
// hex, so no incremental file's name (SharedName) starts with it.
const blobPrefix = "blob-"

// BlobName names a transaction blob written while pre-committing for
// checkpoint id: "blob-<id>-<unique>", unique being random per blob. The
// id lets the JobManager's sweep spare, while the job runs, a blob that
// no completed checkpoint references yet (ParseBlobName).
func BlobName(id ID, unique string) string {
	return blobPrefix + strconv.FormatInt(int64(id), 10) + "-" + unique
}

// ParseBlobName returns the checkpoint id a blob was written for, and
// whether name is a blob's name at all.
//
// Why the sweep needs it: a sink pre-commits a transaction for checkpoint
// N and writes its blob; N is aborted (another task declined), so no
// completed checkpoint references the blob, and a sweep with nothing in
// flight would delete it as an orphan; but the transaction is still
// pending in the task, and checkpoint N+1 records it (and the blob)
// again, to commit it when N+1 completes. So while tasks run, a blob of a
// checkpoint newer than the newest completed one is no orphan yet. Once a
// checkpoint at least as new as N completed, the first of them either
// references the blob or the transaction was committed before it, and
// plain reference counting is exact again.
func ParseBlobName(name string) (ID, bool) {
	rest, ok := strings.CutPrefix(name, blobPrefix)
	if !ok {
		return 0, false
	}
	num, unique, ok := strings.Cut(rest, "-")
	if !ok || unique == "" {
		return 0, false
	}
	id, err := strconv.ParseInt(num, 10, 64)
	if err != nil || id <= 0 {
		return 0, false
	}
	return ID(id), true
}

// SharedName names the shared copy of a store's file: "<storeID>-<local>".
// A store's id is random and its file names are never reused within it,
// and its SSTs never change, so one name always denotes the same bytes: two
// checkpoints that upload one file (concurrent checkpoints) write the same
// name with the same contents, and reference-counting by name is exact.
func SharedName(storeID, local string) string { return storeID + "-" + local }
