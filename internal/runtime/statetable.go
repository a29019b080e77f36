package runtime

import (
	"fmt"
	"sort"

	"github.com/weirstream/weir/internal/checkpoint"
)

// mergeStateTables moves the state-table rows the subtasks acknowledged
// (OperatorSubtaskState.Schemas) into their operator's table
// (OperatorState.States), one row per state, as _metadata records them
// (docs/design/state-evolution.md §2.1). Subtasks of an operator register
// the same states with the same types, so their rows agree; rows that
// differ mean two subtasks would restore one state with different types,
// and the checkpoint is refused rather than recorded with either.
func mergeStateTables(md *checkpoint.Metadata) error {
	for i := range md.Operators {
		op := &md.Operators[i]
		rows := map[string]checkpoint.StateSchema{}
		from := map[string]int{}
		for j := range op.Subtasks {
			st := &op.Subtasks[j]
			for _, r := range st.State.Schemas {
				k := tableKey(r)
				if old, ok := rows[k]; ok && old.Fingerprint != r.Fingerprint {
					return fmt.Errorf("operator %q: subtasks %d and %d registered state %q (%s) with different types (schema fingerprints %s and %s); register each state with one type on every subtask",
						op.UID, from[k], st.Subtask, r.Name, r.Scope, old.Fingerprint, r.Fingerprint)
				}
				rows[k], from[k] = r, st.Subtask
			}
			st.State.Schemas = nil
		}
		if len(rows) == 0 {
			continue
		}
		op.States = make([]checkpoint.StateSchema, 0, len(rows))
		for _, r := range rows {
			op.States = append(op.States, r)
		}
		sort.Slice(op.States, func(a, b int) bool { return tableKey(op.States[a]) < tableKey(op.States[b]) })
	}
	return nil
}

// tableKey identifies a row within its operator's table: by scope and
// name, timers (all named "") by kind.
func tableKey(r checkpoint.StateSchema) string {
	if r.Scope == checkpoint.ScopeTimers {
		return fmt.Sprintf("%s/%03d", r.Scope, r.Kind)
	}
	return r.Scope + "/" + r.Name
}
