package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Program is a cluster application: its jobs and how its commands reach
// the outside world. The zero value of every field but Jobs has a
// default; tests inject Getenv, the streams and BuildID.
type Program struct {
	// Name is the command's name in usage and messages (default: the
	// executable's base name).
	Name string
	// Short is the root command's help text.
	Short string
	// Jobs are the jobs the program runs and builds, by Job.Name.
	Jobs []Job
	// Getenv reads WEIR_* variables (os.Getenv when nil).
	Getenv func(string) string
	// Stdout and Stderr receive output and messages (os.Stdout, os.Stderr
	// when nil).
	Stdout, Stderr io.Writer
	// BuildID identifies the binary to its peers (when empty: the sha256
	// of the running executable's bytes, so that every process of a
	// cluster runs the same user code).
	BuildID string
}

// Main runs a program with jobs on the process's arguments and exits.
func Main(jobs ...Job) {
	p := &Program{Jobs: jobs}
	os.Exit(p.Run(context.Background(), os.Args[1:]))
}

// Run executes the command line args and returns the exit code, having
// printed any error as one line "NAME: message" to Stderr. With no
// arguments, WEIR_ROLE=jobmanager or WEIR_ROLE=taskmanager runs that role.
func (p *Program) Run(ctx context.Context, args []string) int {
	root := p.Command()
	err := p.Execute(ctx, root, args)
	if err != nil {
		fmt.Fprintf(p.stderr(), "%s: %v\n", p.name(), err)
	}
	return ExitCode(err)
}

// Execute runs root (from Command, possibly with more commands added) on
// args, applying WEIR_ROLE when args is empty, and returns its error.
func (p *Program) Execute(ctx context.Context, root *cobra.Command, args []string) error {
	if len(args) == 0 {
		switch role := p.getenv("WEIR_ROLE"); role {
		case "":
		case "jobmanager", "taskmanager":
			args = []string{role}
		default:
			return Usagef("WEIR_ROLE=%q: want jobmanager or taskmanager (or unset it and give a command)", role)
		}
	}
	root.SetArgs(args)
	root.SetOut(p.stdout())
	root.SetErr(p.stderr())
	return root.ExecuteContext(ctx)
}

// Command returns the program's command tree: run, jobmanager,
// taskmanager and the client commands list, cancel, checkpoints,
// savepoint and stop. A program adds its own
// commands to it (cmd/weir adds bench and tools).
func (p *Program) Command() *cobra.Command {
	root := &cobra.Command{
		Use:           p.name(),
		Short:         p.Short,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(c *cobra.Command, _ []string) error {
			if c.Annotations[annotationEnv] == "" {
				return nil
			}
			return applyEnv(c.Flags(), p.getenv)
		},
	}
	if root.Short == "" {
		root.Short = p.name() + ": a weir stream-processing application"
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return Usagef("%v (see %s --help)", err, c.CommandPath())
	})
	root.AddCommand(p.runCommand(), p.jobManagerCommand(), p.taskManagerCommand(),
		p.listCommand(), p.cancelCommand(), p.checkpointsCommand(), p.savepointCommand(), p.stopCommand(), p.rescaleCommand())
	root.AddCommand(p.stateCommand())
	return root
}

// annotationEnv marks the commands whose flags read WEIR_<FLAG>.
const annotationEnv = "weir_app_env"

var envAnnotation = map[string]string{annotationEnv: "true"}

// applyEnv sets every flag the command line left unset from WEIR_<FLAG>
// (upper case, '-' as '_'), if that variable is non-empty.
func applyEnv(fs *pflag.FlagSet, getenv func(string) string) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		key := EnvName(f.Name)
		v := getenv(key)
		if v == "" {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = Usagef("%s=%q (for --%s): %v; fix or unset the variable", key, v, f.Name, e)
		}
	})
	return err
}

// EnvName is the environment variable a flag reads: WEIR_ and the flag's
// name in upper case with '-' as '_' (--state-dir: WEIR_STATE_DIR).
func EnvName(flag string) string {
	return "WEIR_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

func (p *Program) name() string {
	if p.Name != "" {
		return p.Name
	}
	if len(os.Args) > 0 {
		n := os.Args[0]
		if i := strings.LastIndexAny(n, `/\`); i >= 0 {
			n = n[i+1:]
		}
		if n != "" {
			return n
		}
	}
	return "weir"
}

func (p *Program) getenv(k string) string {
	if p.Getenv != nil {
		return p.Getenv(k)
	}
	return os.Getenv(k)
}

func (p *Program) stdout() io.Writer {
	if p.Stdout != nil {
		return p.Stdout
	}
	return os.Stdout
}

func (p *Program) stderr() io.Writer {
	if p.Stderr != nil {
		return p.Stderr
	}
	return os.Stderr
}

func (p *Program) job(kind string) (Job, bool) {
	for _, j := range p.Jobs {
		if j.Name == kind {
			return j, true
		}
	}
	return Job{}, false
}

func (p *Program) jobNames() []string {
	var names []string
	for _, j := range p.Jobs {
		names = append(names, j.Name)
	}
	return names
}

// defaultConnectTimeout is how long client commands wait for the
// JobManager's connection.
const defaultConnectTimeout = 5 * time.Second
