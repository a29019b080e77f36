package app

import (
	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/hooks"
)

// configFlags are --config and -D, on run and on the roles.
type configFlags struct {
	file string
	defs []string
}

func (f *configFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.file, "config", "", "YAML file with Flink-style configuration keys")
	MarkPath(fs, "config")
	fs.StringArrayVarP(&f.defs, "define", "D", nil, "configuration override key=value (repeatable), e.g. -D execution.checkpointing.timeout=1min")
}

// load returns the defaults, then the YAML file, then the -D overrides;
// problems are UsageErrors naming the flag.
func (f *configFlags) load() (*weir.Config, error) {
	cfg := weir.NewConfig()
	if f.file != "" {
		if err := cfg.LoadYAML(f.file); err != nil {
			return nil, Usagef("--config: %v", err)
		}
	}
	if err := hooks.Config(cfg).SetOverrides(f.defs); err != nil {
		return nil, Usagef("-D: %v", err)
	}
	return cfg, nil
}
