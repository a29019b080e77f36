package runtime

import (
	"errors"
	"fmt"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/state"
)

// checkStates compares the restored checkpoint's state tables with the
// states the program declares (Node.States), before the JobMaster deploys
// anything: a declared state the program cannot read, a declared key type
// that hashes differently, or a state an operator no longer declares
// (without --allow-non-restored-state) fails the job here, at once, and no
// task opens a sink or a source. States registered without a declaration
// are checked as each task registers them, which fails the job without a
// restart too, but after deployment.
func (rp *restorePoint) checkStates(jg *dataflow.JobGraph, allowNonRestored bool) error {
	if rp == nil {
		return nil
	}
	var errs []error
	for _, op := range StateReport(rp.md, jg, allowNonRestored) {
		if err := state.FindingsErr(op.Findings); err != nil {
			errs = append(errs, fmt.Errorf("operator %q: %w", op.UID, err))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return Unrecoverable(fmt.Errorf("restore %s (checkpoint %d): %w", rp.path, rp.md.ID, errors.Join(errs...)))
}

// OperatorStates is the state check of one operator with declarations.
type OperatorStates struct {
	UID      string
	Findings []state.Finding
}

// StateReport checks every operator of jg that declares states against
// md's state tables (savepoint check prints it; checkStates acts on it).
func StateReport(md *checkpoint.Metadata, jg *dataflow.JobGraph, allowNonRestored bool) []OperatorStates {
	var out []OperatorStates
	for _, v := range jg.Vertices {
		for _, n := range v.Chain {
			if n.States == nil {
				continue
			}
			var rows []checkpoint.StateSchema
			if op := md.Operator(n.UID); op != nil {
				rows = op.States
				if rows == nil && !hasState(*op) {
					rows = []checkpoint.StateSchema{} // nothing stored: every declared state is new
				}
			} else {
				rows = []checkpoint.StateSchema{}
			}
			out = append(out, OperatorStates{UID: n.UID, Findings: n.States.Check(rows, allowNonRestored)})
		}
	}
	return out
}
