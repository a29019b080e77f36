package checkpoint

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
// name, in metadata order.
func (m *Metadata) SharedRefs() []SharedFileRef {
	seen := map[string]bool{}
	var out []SharedFileRef
	for _, op := range m.Operators {
		for _, st := range op.Subtasks {
			h := st.State.Incremental
			if h == nil {
				continue
			}
			for _, r := range h.Shared {
				if !seen[r.Name] {
					seen[r.Name] = true
					out = append(out, r)
				}
			}
		}
	}
	return out
}

// SharedName names the shared copy of a store's file: "<storeID>-<local>".
// A store's id is random and its file names are never reused within it,
// and its SSTs never change, so one name always denotes the same bytes: two
// checkpoints that upload one file (concurrent checkpoints) write the same
// name with the same contents, and reference-counting by name is exact.
func SharedName(storeID, local string) string { return storeID + "-" + local }
