package app

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/weirstream/weir/internal/config"
)

// normalizeArgs renders the job flags named in names as the arguments a
// client submits: one --name=value per value of each flag the user set,
// sorted by name so equal command lines give equal specs. Paths become
// absolute and zero seeds are replaced by seed(), including flags left at
// their defaults (a relative default means the client's folder, a zero
// seed a choice the client must make once for every role). Client-only
// flags are dropped.
func normalizeArgs(fs *pflag.FlagSet, names []string, seed func() int64) ([]string, error) {
	names = append([]string(nil), names...)
	sort.Strings(names)
	var out []string
	for _, name := range names {
		f := fs.Lookup(name)
		if f == nil || annotation(f, annotationClientOnly) != "" {
			continue
		}
		isPath := isPathFlag(f)
		isSeed := annotation(f, annotationSeed) != ""
		var values []string
		switch {
		case f.Changed:
			values = []string{f.Value.String()}
			if sv, ok := f.Value.(pflag.SliceValue); ok {
				values = sv.GetSlice()
			}
		case isSeed && f.DefValue == "0":
			values = []string{"0"}
		case isPath && f.DefValue != "" && !filepath.IsAbs(f.DefValue):
			values = []string{f.DefValue}
		default:
			continue
		}
		for _, v := range values {
			if isPath {
				abs, err := absPath(v)
				if err != nil {
					return nil, Usagef("--%s %s: %v", name, v, err)
				}
				v = abs
			}
			if isSeed && v == "0" {
				v = fmt.Sprint(seed())
			}
			out = append(out, "--"+name+"="+v)
		}
	}
	return out, nil
}

// isPathFlag reports whether f was marked with MarkPath or with cobra's
// MarkFlagFilename / MarkFlagDirname.
func isPathFlag(f *pflag.Flag) bool {
	return annotation(f, annotationPath) != "" ||
		f.Annotations[cobra.BashCompFilenameExt] != nil ||
		f.Annotations[cobra.BashCompSubdirsInDir] != nil
}

// absPath makes a local path absolute and leaves URLs and "" alone.
func absPath(p string) (string, error) {
	if p == "" || strings.Contains(p, "://") {
		return p, nil
	}
	return filepath.Abs(p)
}

// normalizeConfig returns the explicitly set keys of cfg as a client
// submits them: a local checkpoint folder made absolute, since the
// JobManager and TaskManagers resolve it in their own working directory.
func normalizeConfig(cfg *config.Config) (map[string]string, error) {
	m := cfg.Explicit()
	for k := range m {
		// The cluster's own configuration (with etcd credentials), read
		// here to find the leader: not the job's.
		if strings.HasPrefix(k, "high-availability.") {
			delete(m, k)
		}
	}
	if d, ok := m[config.CheckpointsDir]; ok {
		abs, err := absPath(d)
		if err != nil {
			return nil, Usagef("%s %s: %v", config.CheckpointsDir, d, err)
		}
		m[config.CheckpointsDir] = abs
	}
	return m, nil
}
