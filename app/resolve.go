package app

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/runtime"
)

// Resolve builds a job's graph and configuration from its spec, as every
// role of the cluster does (a cluster.Resolver): it finds the job named
// spec.Kind, parses spec.Args into a fresh instance of its flags, makes a
// weir.Config from spec.Config, runs Build and captures what env.Execute
// would run. Run.Configure and Run.Finish do not run here. It is safe for
// concurrent use.
func (p *Program) Resolve(ctx context.Context, spec runtime.JobSpec) (*runtime.Graph, runtime.JobConfig, error) {
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
	return capture(ctx, spec.Name, cfg, run)
}

// capture runs run.Build on a new Env and returns the graph and
// configuration that env.Execute hands to the runtime.
func capture(ctx context.Context, name string, cfg *weir.Config, run Run) (*runtime.Graph, runtime.JobConfig, error) {
	env := weir.NewEnv(cfg)
	if run.Build == nil {
		return nil, runtime.JobConfig{}, fmt.Errorf("job %s: the job has no Build function", name)
	}
	if err := run.Build(env); err != nil {
		return nil, runtime.JobConfig{}, fmt.Errorf("job %s: build: %w", name, err)
	}
	var (
		graph *runtime.Graph
		jc    runtime.JobConfig
	)
	ctx = runtime.WithExecutor(ctx, func(_ context.Context, g *runtime.Graph, c runtime.JobConfig) error {
		graph, jc = g, c
		return nil
	})
	if err := env.Execute(ctx, name); err != nil {
		return nil, runtime.JobConfig{}, fmt.Errorf("job %s: %w", name, err)
	}
	if graph == nil {
		return nil, runtime.JobConfig{}, fmt.Errorf("job %s: env.Execute returned without handing over the graph", name)
	}
	return graph, jc, nil
}
