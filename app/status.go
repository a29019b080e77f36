package app

import (
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobstatus"
)

// jobStatus is the live monitoring surface of env's job: what the progress
// line, the summary, the local REST API and its metrics read. It is the
// one place app reaches into an Env for it.
func jobStatus(env *weir.Env) *jobstatus.JobStatus { return hooks.Plan(env).Status }
