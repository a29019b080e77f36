package app

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weirstream/weir/internal/vfs/s3fs"
)

const addressingLong = `

The job is addressed as by every client command: --jobmanager HOST:PORT
(the default, 127.0.0.1:6123) for a job on a cluster, --rest-address
HOST:PORT for a local run started with run --rest-address.

High availability: --jobmanager takes a comma-separated list of
JobManagers, and the client follows a standby's answer to the leader.
With high-availability.type: etcd in --config FILE or -D key=value (the
JobManagers' high-availability.* keys) the leader is found in etcd;
--jobmanager is then tried after etcd's answer, and only if given.`

func (p *Program) savepointCommand() *cobra.Command {
	var target string
	c := p.clientCommand("savepoint JOB", "Take a savepoint of a running job", exactlyOneJob, func(ctx context.Context, cl jobClient, args []string) error {
		// No --target: the serving process's state.savepoints.dir.
		if err := checkTarget("--target", target); err != nil {
			return err
		}
		path, err := cl.Savepoint(ctx, args[0], target)
		if err != nil {
			return err
		}
		fmt.Fprintln(p.stdout(), path)
		return nil
	})
	c.Long = `savepoint asks the running job for a checkpoint and copies it into a new
folder under --target: self-contained and relocatable, never deleted by
retention. The target must lie under the serving process's
state.savepoints.dir (without --target: that folder), unless it sets
rest.savepoints.allow-any-target: true. A relative --target is sent as
given and taken under that folder by the serving process (the
JobManager, or the local run started with --rest-address, whose
state.savepoints.dir defaults to <state-dir>/savepoints), whatever the
client's working directory; it must not contain "..". An absolute
--target must name a folder under state.savepoints.dir. With
security.rest.token-file in --config/-D the client sends the REST API's
token. Resume from it with 'run … --from PATH' at any parallelism.
On a cluster the savepoint is taken through the JobManager's REST API,
whose address the JobManager tells the client.` + addressingLong
	c.Flags().StringVar(&target, "target", "", "folder to write the savepoint into: a name under the server's state.savepoints.dir, or an absolute folder under it (default: that folder; every TaskManager must reach it at the same path)")
	c.AddCommand(p.savepointCheckCommand())
	return c
}

func (p *Program) stopCommand() *cobra.Command {
	var target string
	c := p.clientCommand("stop JOB", "Stop a running job gracefully, optionally with a final savepoint", exactlyOneJob, func(ctx context.Context, cl jobClient, args []string) error {
		if err := checkTarget("--savepoint", target); err != nil {
			return err
		}
		path, err := cl.Stop(ctx, args[0], target)
		if err != nil {
			return err
		}
		if path != "" {
			fmt.Fprintln(p.stdout(), path)
		}
		return nil
	})
	c.Long = `stop makes every source stop reading, takes the final checkpoint, lets the
two-phase-commit sinks commit, and ends the job (it ends FINISHED). With
--savepoint DIR the final checkpoint is also copied into a savepoint
folder under DIR, from which 'run … --from PATH' continues where the job
stopped; the client prints that folder. DIR follows the rules of
'savepoint --target': a relative DIR is sent as given and taken under the
serving process's state.savepoints.dir (the JobManager's, or the local
run's), not under the client's working directory; an absolute DIR must
lie under state.savepoints.dir.` + addressingLong
	c.Flags().StringVar(&target, "savepoint", "", "folder to write a final savepoint into: a name under the server's state.savepoints.dir, or an absolute folder under it")
	return c
}

// checkTarget checks a savepoint target before the client sends it as
// given. A relative name is not made absolute here: the serving process
// (a JobManager, possibly on another host, or a local run) takes it under
// its own state.savepoints.dir, while the client's working directory
// would make it a folder outside, which the server refuses. So a relative
// name with ".." is refused here already, and an s3:// URL must parse.
func checkTarget(flag, target string) error {
	if s3fs.IsURL(target) {
		if _, err := s3fs.PathOf(target); err != nil {
			return Usagef("%s %s: %v", flag, target, err)
		}
		return nil
	}
	p := strings.TrimPrefix(target, "file://")
	if target == "" || filepath.IsAbs(p) || strings.Contains(p, "://") {
		return nil // absolute (or another scheme): the server's rule decides
	}
	for _, e := range strings.Split(filepath.ToSlash(p), "/") {
		if e == ".." {
			return Usagef("%s %s: a relative name is a folder under the job's state.savepoints.dir (resolved by the JobManager, or the local run) and must not contain \"..\"; give a name inside it, or an absolute folder under it", flag, target)
		}
	}
	return nil
}
