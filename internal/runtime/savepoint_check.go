package runtime

import (
	"context"
	"fmt"
	"sort"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/checkpoint/storage"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/state"
)

// SavepointReport is what `savepoint check` finds between a checkpoint or
// savepoint and the job a program builds, without running it: the checks
// a restore makes before it deploys (operators, max parallelism, channel
// state, declared states), and the states only the tasks can check, as
// they register them (undeclared).
type SavepointReport struct {
	Path       string `json:"path"`
	Checkpoint int64  `json:"checkpoint"`
	// Result is "compatible", or "incompatible" when a restore would
	// fail.
	Result string `json:"result"`
	// Problems are the operator-level findings that fail a restore.
	Problems  []string                `json:"problems,omitempty"`
	Operators []SavepointOperatorInfo `json:"operators"`
}

// SavepointOperatorInfo is one operator of the job or the checkpoint.
type SavepointOperatorInfo struct {
	UID          string               `json:"uid"`
	Name         string               `json:"name,omitempty"`
	InJob        bool                 `json:"inJob"`
	InCheckpoint bool                 `json:"inCheckpoint"`
	Parallelism  [2]int               `json:"parallelism"` // checkpoint, job
	States       []SavepointStateInfo `json:"states,omitempty"`
}

// SavepointStateInfo is one state of an operator.
type SavepointStateInfo struct {
	Scope   string `json:"scope"`
	Name    string `json:"name"`
	Stored  string `json:"stored,omitempty"`  // the recorded schema
	Program string `json:"program,omitempty"` // the declaration
	// Result is a state.Verdict, or "undeclared" (checked when the task
	// registers it).
	Result string `json:"result"`
	Error  string `json:"error,omitempty"`
}

// Undeclared is the result of a stored state no declaration covers.
const Undeclared = "undeclared"

// CheckSavepoint compares the checkpoint or savepoint at path with the job
// g builds under cfg, as a restore would before deploying. The error is
// for a path that does not load; what blocks a restore is in the report.
func CheckSavepoint(ctx context.Context, g *dataflow.Graph, cfg JobConfig, path string) (*SavepointReport, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	jg, err := dataflow.BuildJobGraph(g, cfg.MaxParallelism)
	if err != nil {
		return nil, err
	}
	var md *checkpoint.Metadata
	var fs *storage.FS
	if cfg.Locations == nil {
		md, fs, err = storage.LoadPath(ctx, path)
	} else {
		fsys, p, lerr := cfg.Locations.RestoreSource(ctx, path)
		if lerr != nil {
			return nil, lerr
		}
		md, fs, err = storage.LoadPath(ctx, p, storage.WithFS(fsys))
	}
	if err != nil {
		return nil, err
	}
	rp := &restorePoint{md: md, fs: fs, path: path}
	rep := &SavepointReport{Path: path, Checkpoint: int64(md.ID), Result: "compatible"}
	for _, check := range []func() error{
		func() error { return rp.checkOperators(jg, cfg.AllowNonRestoredState) },
		func() error { return rp.checkChannelState(jg) },
	} {
		if err := check(); err != nil {
			rep.Problems = append(rep.Problems, err.Error())
		}
	}
	declared := map[string][]state.Finding{}
	for _, op := range StateReport(md, jg, cfg.AllowNonRestoredState) {
		declared[op.UID] = op.Findings
	}
	inJob := map[string]*dataflow.Node{}
	for _, v := range jg.Vertices {
		for _, n := range v.Chain {
			inJob[n.UID] = n
		}
	}
	seen := map[string]bool{}
	for _, op := range md.Operators {
		seen[op.UID] = true
		info := SavepointOperatorInfo{UID: op.UID, InCheckpoint: hasState(op) || len(op.States) > 0, Parallelism: [2]int{op.Parallelism, 0}}
		if n := inJob[op.UID]; n != nil {
			info.InJob, info.Name, info.Parallelism[1] = true, n.Name, n.Parallelism
		}
		info.States = statesInfo(op.States, declared[op.UID], inJob[op.UID])
		if info.InCheckpoint || info.InJob {
			rep.Operators = append(rep.Operators, info)
		}
	}
	for uid, n := range inJob {
		if !seen[uid] {
			rep.Operators = append(rep.Operators, SavepointOperatorInfo{UID: uid, Name: n.Name, InJob: true, Parallelism: [2]int{0, n.Parallelism},
				States: statesInfo(nil, declared[uid], n)})
		}
	}
	sort.Slice(rep.Operators, func(i, j int) bool { return rep.Operators[i].UID < rep.Operators[j].UID })
	if len(rep.Problems) > 0 {
		rep.Result = "incompatible"
	}
	for _, op := range rep.Operators {
		for _, s := range op.States {
			if s.Error != "" {
				rep.Result = "incompatible"
			}
		}
	}
	return rep, nil
}

// statesInfo merges an operator's stored rows with its declarations'
// findings: declared states as the check found them, stored states
// without a declaration as undeclared (the operator's own tasks check them
// when they register), or as the findings say when the declaration is
// complete.
func statesInfo(rows []checkpoint.StateSchema, findings []state.Finding, n *dataflow.Node) []SavepointStateInfo {
	var out []SavepointStateInfo
	covered := map[string]bool{}
	stored := map[string]checkpoint.StateSchema{}
	for _, r := range rows {
		stored[r.Scope+"/"+r.Name] = r
	}
	for _, f := range findings {
		covered[f.Scope+"/"+f.Name] = true
		s := SavepointStateInfo{Scope: f.Scope, Name: f.Name, Program: f.Desc, Result: string(f.Verdict)}
		if r, ok := stored[f.Scope+"/"+f.Name]; ok {
			s.Stored = schemaText(r)
		}
		if f.Err != nil {
			s.Error = f.Err.Error()
		}
		out = append(out, s)
	}
	for _, r := range rows {
		if covered[r.Scope+"/"+r.Name] || r.Scope == checkpoint.ScopeTimers {
			continue
		}
		res := Undeclared
		if n == nil {
			res = string(state.VerdictDropped)
		}
		out = append(out, SavepointStateInfo{Scope: r.Scope, Name: r.Name, Stored: schemaText(r), Result: res})
	}
	return out
}

// schemaText renders a row's schemas for people.
func schemaText(r checkpoint.StateSchema) string {
	show := func(b []byte) string {
		s, _, err := codec.DecodeSchema(b)
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return s.String()
	}
	switch {
	case len(r.UserKey) > 0:
		return fmt.Sprintf("%s of %s to %s", state.Kind(r.Kind), show(r.UserKey), show(r.Value))
	case r.Scope == checkpoint.ScopeKeyed:
		return fmt.Sprintf("%s of %s", state.Kind(r.Kind), show(r.Value))
	case len(r.Value) > 0:
		return show(r.Value)
	}
	return ""
}
