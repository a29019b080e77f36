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
		if target != "" {
			abs, err := absLocation(target)
			if err != nil {
				return Usagef("--target %s: %v", target, err)
			}
			target = abs
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
rest.savepoints.allow-any-target: true. With security.rest.token-file in
--config/-D the client sends the REST API's token. Resume from it with 'run … --from PATH' at any parallelism.
On a cluster the savepoint is taken through the JobManager's REST API,
whose address the JobManager tells the client.` + addressingLong
	c.Flags().StringVar(&target, "target", "", "folder to write the savepoint into, under the server's state.savepoints.dir (default: that folder; every TaskManager must reach it at the same path)")
	return c
}

func (p *Program) stopCommand() *cobra.Command {
	var target string
	c := p.clientCommand("stop JOB", "Stop a running job gracefully, optionally with a final savepoint", exactlyOneJob, func(ctx context.Context, cl jobClient, args []string) error {
		if target != "" {
			abs, err := absLocation(target)
			if err != nil {
				return Usagef("--savepoint %s: %v", target, err)
			}
			target = abs
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
stopped.` + addressingLong
	c.Flags().StringVar(&target, "savepoint", "", "folder to write a final savepoint into")
	return c
}

// absLocation makes a local path absolute and checks an s3:// URL, for
// locations sent to a running job (savepoint targets), which resolves
// them in its own working directory otherwise.
func absLocation(loc string) (string, error) {
	if s3fs.IsURL(loc) {
		_, err := s3fs.PathOf(loc)
		return loc, err
	}
	return filepath.Abs(strings.TrimPrefix(loc, "file://"))
}
