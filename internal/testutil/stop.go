package testutil

import (
	"context"
	"errors"
	"time"

	"github.com/weirstream/weir"
)

// StopJob stops j with a savepoint into dir ("" for none) once the job
// runs. A source may emit records before the job reports RUNNING (its
// tasks run before the last of them reported so), and a stop before that
// fails with weir.ErrNotRunning; StopJob retries until the job runs, it
// ends, or ctx ends.
func StopJob(ctx context.Context, j *weir.Job, dir string) (string, error) {
	for {
		sp, err := j.Stop(ctx, dir)
		if !errors.Is(err, weir.ErrNotRunning) || ctx.Err() != nil {
			return sp, err
		}
		select {
		case <-j.Done():
			return sp, err
		case <-ctx.Done():
			return sp, err
		case <-time.After(5 * time.Millisecond):
		}
	}
}
