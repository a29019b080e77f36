package app

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/vfs/s3fs"
)

// annotationConfigKey marks a flag that stands for a configuration key
// (MarkConfigKey).
const annotationConfigKey = "weir_app_config_key"

// MarkConfigKey marks flag name as standing for configuration key key:
// Run.Configure sets key from it (as --state-dir sets
// state.checkpoints.dir). A local run then names the flag when it says
// where the key's value came from, e.g. which checkpoint storage it uses
// when --state-dir and -D state.checkpoints.dir disagree.
func MarkConfigKey(fs *pflag.FlagSet, name, key string) {
	mustAnnotate(fs, name, annotationConfigKey, key)
}

// storageLine says which checkpoint storage a local run uses and where
// the value came from, naming the sources it overrode:
//
//	checkpoint storage: /tmp/x/demo (from --state-dir; -D state.checkpoints.dir=/tmp/y is overridden)
func storageLine(location, source string, overridden []string) string {
	s := fmt.Sprintf("checkpoint storage: %s (%s", location, source)
	if len(overridden) > 0 {
		s += "; " + strings.Join(overridden, ", ") + " " + plural(len(overridden), "is", "are") + " overridden"
	}
	return s + ")"
}

func plural(n int, one, more string) string {
	if n == 1 {
		return one
	}
	return more
}

// storageLocation is the job's checkpoint folder as the user names it: the
// s3:// URL, or the absolute local path.
func storageLocation(jc runtime.JobConfig, configured string) string {
	if s3fs.IsURL(configured) {
		return strings.TrimSuffix(configured, "/") + "/" + jc.JobName
	}
	dir, err := filepath.Abs(jc.CheckpointDir)
	if err != nil {
		dir = jc.CheckpointDir
	}
	return filepath.Join(dir, jc.JobName)
}

// storageSource says where the value of state.checkpoints.dir in cfg came
// from — a flag marked with MarkConfigKey, -D, --config, a flag's
// default, the job itself, or weir's default — and lists the sources
// that set another value ("-D state.checkpoints.dir=/tmp/y"). cfg is the
// configuration the job runs with (after Run.Configure and Build).
func (lf *launchFlags) storageSource(fs *pflag.FlagSet, cfg *weir.Config) (source string, overridden []string) {
	const key = config.CheckpointsDir
	final := hooks.Config(cfg).String(key)
	type setter struct{ name, value, over string } // over: how an overridden one is named
	var set []setter                               // highest precedence first
	var flagDefault *pflag.Flag
	fs.VisitAll(func(f *pflag.Flag) {
		if annotation(f, annotationConfigKey) != key {
			return
		}
		if f.Changed {
			set = append(set, setter{"--" + f.Name, f.Value.String(), fmt.Sprintf("--%s %s", f.Name, f.Value)})
		} else {
			flagDefault = f
		}
	})
	if v, ok := lf.config.defined(key); ok {
		set = append(set, setter{"-D " + key, v, fmt.Sprintf("-D %s=%s", key, v)})
	}
	if v, ok := lf.config.fromFile(key); ok {
		set = append(set, setter{"--config " + lf.config.file, v, fmt.Sprintf("%s: %s in --config %s", key, v, lf.config.file)})
	}
	if flagDefault != nil && len(set) == 0 {
		set = append(set, setter{"the default of --" + flagDefault.Name, flagDefault.DefValue, ""})
	}
	source = ""
	for _, s := range set {
		if source == "" && s.value == final {
			source = "from " + s.name
			continue
		}
		if s.value != final && s.over != "" {
			overridden = append(overridden, s.over)
		}
	}
	switch {
	case source != "":
	case final != "":
		source = "set by the job"
	default:
		source = "weir's default; set state.checkpoints.dir to choose"
	}
	return source, overridden
}

// defined returns the value -D gives key, if any.
func (f *configFlags) defined(key string) (string, bool) {
	c := weir.NewConfig()
	if err := hooks.Config(c).SetOverrides(f.defs); err != nil || !c.IsSet(key) {
		return "", false
	}
	return hooks.Config(c).String(key), true
}

// fromFile returns the value --config gives key, if any.
func (f *configFlags) fromFile(key string) (string, bool) {
	if f.file == "" {
		return "", false
	}
	c := weir.NewConfig()
	if err := c.LoadYAML(f.file); err != nil || !c.IsSet(key) {
		return "", false
	}
	return hooks.Config(c).String(key), true
}
