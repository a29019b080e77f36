package registry

import (
	"slices"

	"github.com/weirstream/weir/internal/checkpoint"
)

// Registry counts, per shared file name, the registered checkpoints that
// reference it. The zero value is not usable; call New.
type Registry struct {
	refs  map[string]map[checkpoint.ID]struct{}
	byChk map[checkpoint.ID][]string
}

// New returns an empty registry.
func New() *Registry {
	return &Registry{refs: map[string]map[checkpoint.ID]struct{}{}, byChk: map[checkpoint.ID][]string{}}
}

// Register records that completed checkpoint id references names.
// Registering an id again adds to its names (a restart that re-reads a
// checkpoint changes nothing).
func (r *Registry) Register(id checkpoint.ID, names []string) {
	have := r.byChk[id]
	for _, n := range names {
		set := r.refs[n]
		if set == nil {
			set = map[checkpoint.ID]struct{}{}
			r.refs[n] = set
		}
		if _, dup := set[id]; dup {
			continue
		}
		set[id] = struct{}{}
		have = append(have, n)
	}
	r.byChk[id] = have
}

// Release forgets checkpoint id (retention removed it, or it was
// discarded) and returns, sorted, the names no registered checkpoint
// references any more: the caller deletes them. Releasing an unknown id
// returns nothing.
func (r *Registry) Release(id checkpoint.ID) []string {
	names, ok := r.byChk[id]
	if !ok {
		return nil
	}
	delete(r.byChk, id)
	var free []string
	for _, n := range names {
		set := r.refs[n]
		delete(set, id)
		if len(set) == 0 {
			delete(r.refs, n)
			free = append(free, n)
		}
	}
	slices.Sort(free)
	return free
}

// Referenced reports whether a registered checkpoint references name.
func (r *Registry) Referenced(name string) bool { return len(r.refs[name]) > 0 }

// Checkpoints returns the registered checkpoint ids, ascending.
func (r *Registry) Checkpoints() []checkpoint.ID {
	ids := make([]checkpoint.ID, 0, len(r.byChk))
	for id := range r.byChk {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Files returns the referenced names, sorted.
func (r *Registry) Files() []string {
	out := make([]string, 0, len(r.refs))
	for n := range r.refs {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Orphans returns, sorted, the names of listed (the shared area's
// contents) that no registered checkpoint references: uploads of
// checkpoints that failed or never completed. Call it only while no
// checkpoint is in flight: an in-flight checkpoint's uploads are not
// registered yet, and it may reference a file a failed one uploaded too.
func (r *Registry) Orphans(listed []string) []string {
	var out []string
	for _, n := range listed {
		if !r.Referenced(n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
