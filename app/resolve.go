package app

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/runtime"
)

func init() {
	hooks.RegisterProgram(func(p any) hooks.ResolveFunc { return p.(*Program).resolve })
}

// resolve builds a job's graph and configuration from its spec, as every
// role of the cluster does (a cluster.Resolver): it finds the job named
// spec.Kind, parses spec.Args into a fresh instance of its flags, makes a
// weir.Config from spec.Config, runs Build and resolves the Env's plan
// without running it. Run.Configure and Run.Finish do not run here. It is
// safe for concurrent use.
func (p *Program) resolve(ctx context.Context, spec deployment.JobSpec) (*dataflow.Graph, runtime.JobConfig, error) {
	job, ok := p.job(spec.Kind)
	if !ok {
		return nil, runtime.JobConfig{}, fmt.Errorf("job %s: kind %q is not a job of this program (it has %s): run the same binary in every role",
			spec.Name, spec.Kind, strings.Join(p.jobNames(), ", "))
	}
	fs := pflag.NewFlagSet(spec.Kind, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	run := job.Define(fs)
	if err := fs.Parse(spec.Args); err != nil {
		return nil, runtime.JobConfig{}, fmt.Errorf("job %s: arguments %q: %w", spec.Name, spec.Args, err)
	}
	if fs.NArg() > 0 {
		return nil, runtime.JobConfig{}, fmt.Errorf("job %s: unexpected arguments %q: a %s job takes flags only", spec.Name, fs.Args(), spec.Kind)
	}
	cfg := weir.NewConfig()
	keys := make([]string, 0, len(spec.Config))
	for k := range spec.Config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := cfg.Set(k, spec.Config[k]); err != nil {
			return nil, runtime.JobConfig{}, fmt.Errorf("job %s: configuration: %w", spec.Name, err)
		}
	}
	return build(ctx, spec.Name, cfg, run)
}

// build runs run.Build on a new Env and returns the graph and the filled
// configuration its plan resolves to: what Env.Start would run.
func build(ctx context.Context, name string, cfg *weir.Config, run Run) (*dataflow.Graph, runtime.JobConfig, error) {
	env := weir.NewEnv(weir.WithConfig(cfg))
	if run.Build == nil {
		return nil, runtime.JobConfig{}, fmt.Errorf("job %s: the job has no Build function", name)
	}
	if err := run.Build(env); err != nil {
		return nil, runtime.JobConfig{}, fmt.Errorf("job %s: build: %w", name, err)
	}
	g, jc, err := hooks.Plan(env).Resolve(ctx, name)
	if err != nil {
		return nil, runtime.JobConfig{}, fmt.Errorf("job %s: %w", name, err)
	}
	return g, jc, nil
}
