// Package hooks is the one door from the module's own layers (app,
// cmd/weir, internal tests) to the internals of a public weir value, in the
// manner of Pebble's Options.private: the public API stays free of
// internal types, and test-only or engine-only knobs (a fault injector, a
// checkpoint filesystem, the rich job status behind REST and metrics, the
// plan a cluster role builds without running it) are reached here.
//
// Packages weir and app fill the accessors in their init; hooks cannot
// import them (they import it), so the accessors take the public values as
// any and panic on anything else, which is a programming error in the
// module.
//
// Owns: the accessors from public values to their internals. Must not
// touch: anything else; it holds no state of its own beyond the accessors
// registered at init.
package hooks

import (
	"context"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/plan"
	"github.com/weirstream/weir/internal/runtime"
)

var (
	planOf   func(env any) *plan.Plan
	configOf func(cfg any) *config.Config
)

// Register is called once by package weir's init with the accessors of
// *weir.Env and *weir.Config.
func Register(envPlan func(env any) *plan.Plan, cfgInternal func(cfg any) *config.Config) {
	planOf, configOf = envPlan, cfgInternal
}

// Plan returns the plan a *weir.Env (or the *weir.Env of a *weir.Job)
// assembles: its graph, configuration, run options and the job status its
// runs report to. Setting Plan.Faults or Plan.CheckpointFS before the job
// starts is how tests inject failures.
func Plan(env any) *plan.Plan { return planOf(env) }

// Config returns the engine configuration a *weir.Config wraps, for the
// module's callers that read keys by their internal constants.
func Config(cfg any) *config.Config { return configOf(cfg) }

// ResolveFunc builds a job's graph and filled configuration from its spec
// without running it (a cluster.Resolver).
type ResolveFunc = func(ctx context.Context, spec deployment.JobSpec) (*dataflow.Graph, runtime.JobConfig, error)

var programResolver func(program any) ResolveFunc

// RegisterProgram is called once by package app's init with the accessor
// of an *app.Program's resolver.
func RegisterProgram(f func(program any) ResolveFunc) { programResolver = f }

// Resolver returns how an *app.Program builds the jobs submitted to a
// cluster, as its JobManager and TaskManagers do; tests hand it to a
// stand-in JobManager.
func Resolver(program any) ResolveFunc { return programResolver(program) }
