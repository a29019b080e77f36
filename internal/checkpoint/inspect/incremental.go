package inspect

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

// incremental reports one subtask's LSM store (an incremental checkpoint
// of the lsm backend). The store's files are not opened: their size and
// CRC32C were verified by storage.LoadPath, shared ones included, and
// their contents are Pebble's. The timers file, in the canonical keyed
// format, is read and counted like a keyed state file.
func incremental(ctx context.Context, sfs *storage.FS, h *checkpoint.IncrementalKeyedStateHandle, maxP, parallelism, subtask int) (*Incremental, error) {
	asg := keygroup.RangeFor(maxP, parallelism, subtask)
	inc := &Incremental{
		StoreID:      h.StoreID,
		KeyGroups:    Range{Start: h.KeyGroupStart, End: h.KeyGroupEnd},
		Assigned:     Range{Start: asg.Start, End: asg.End},
		States:       make([]StoreState, 0, len(h.States)),
		Private:      make([]PrivateFile, 0, len(h.Private)),
		SharedFiles:  len(h.Shared),
		FullSize:     h.FullSize,
		UploadedSize: h.UploadedSize,
	}
	for _, r := range h.Shared {
		inc.SharedBytes += r.Size
	}
	for _, s := range h.States {
		kind, ttl := storeKind(s.Kind)
		inc.States = append(inc.States, StoreState{Name: s.Name, Kind: kind, TTL: ttl, ID: s.ID})
	}
	sort.Slice(inc.States, func(i, j int) bool { return inc.States[i].Name < inc.States[j].Name })
	for _, p := range h.Private {
		inc.Private = append(inc.Private, PrivateFile{Local: p.Local, File: p.File.Path, Size: p.File.Size, CRC32C: p.File.CRC32C})
	}
	if t := h.Timers; t != nil {
		data, err := sfs.ReadFile(ctx, t.File)
		if err != nil {
			return nil, fmt.Errorf("timers: %w", err)
		}
		abs := filepath.Join(sfs.JobDir(), filepath.FromSlash(t.File.Path))
		k, err := keyed(t, data, abs, maxP, parallelism, subtask)
		if err != nil {
			return nil, fmt.Errorf("timers: %w", err)
		}
		inc.TimersFile, inc.TimersSize, inc.Timers, inc.EventTimers = t.File.Path, t.File.Size, k.Timers, k.EventTimers
	}
	return inc, nil
}

// storeKind names a store catalogue's state kind (internal/state's
// state.Kind, which the keyed file format shares) and its TTL flag.
func storeKind(k uint8) (name string, ttl bool) {
	if n, ttl, ok := stateKind(state.Kind(k)); ok {
		return n, ttl
	}
	return fmt.Sprintf("kind %d", k), false
}

// sharedFiles collects the report's shared-file section: each file the
// checkpoint references in the job's shared area, once, with every
// operator subtask whose store references it, sorted by file name.
func sharedFiles(md *checkpoint.Metadata) []SharedFile {
	byName := map[string]*SharedFile{}
	for _, op := range md.Operators {
		for _, st := range op.Subtasks {
			h := st.State.Incremental
			if h == nil {
				continue
			}
			for _, r := range h.Shared {
				f := byName[r.Name]
				if f == nil {
					f = &SharedFile{File: r.StateFile().Path, Size: r.Size, CRC32C: r.CRC32C, Local: r.Local}
					byName[r.Name] = f
				}
				f.ReferencedBy = append(f.ReferencedBy, SubtaskRef{Operator: op.UID, Subtask: st.Subtask})
			}
		}
	}
	return sortedValues(byName)
}
