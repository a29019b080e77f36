// Package rest serves a JSON monitoring API over running jobs, shaped
// after Flink's REST API so that its users and tools find the paths and
// field names they know (GET /jobs, /jobs/{jobid}/checkpoints, …), and
// the Prometheus exposition at /metrics.
//
// The handlers are thin: each reads one job's typed snapshot
// (jobstatus.JobStatus: State, Times, Checkpoints, Vertices, Tasks) and
// renders it; the writes are POST /jobs/{jobid}/checkpoints (a checkpoint
// now) and the asynchronous savepoint and stop (POST answers a
// request-id, GET …/savepoints|stop/{triggerid} polls it), through the
// Job's Control, and PATCH …?mode=cancel (Canceler). Jobs come in
// through the Job interface, so local mode (one job in the weir process)
// and the cluster's JobManager (many jobs) share the handlers.
//
// Security (targets.go, auth.go): savepoint targets must lie under
// Config.SavepointsDir (state.savepoints.dir) unless
// Config.AllowAnySavepointTarget; Config.Token (security.rest.token-file)
// makes every request but GET /healthz and /readyz carry a bearer token
// (RequireToken wraps any handler, e.g. a JobManager's outer one); bodies
// are limited to 1 MiB.
//
// A walkthrough of local mode, as cmd/weir does it:
//
//	ln, err := rest.Listen("127.0.0.1:8081", false) // loopback unless allowed
//	h := rest.NewHandler(rest.Config{
//		Jobs:    func() []rest.Job { return []rest.Job{job} },
//		Metrics: metrics.Handler(reg, logger),
//	})
//	srv := rest.Serve(ln, h, logger)
//	defer srv.Shutdown(ctx)
//
// Errors are JSON too: {"errors": ["..."]} with 404 for an unknown job,
// vertex, checkpoint or path and 405 (with Allow) for a wrong method.
// docs/rest.md lists every endpoint with an example response.
//
// Owns: paths, JSON shapes and errors of the REST API. Must not touch: the
// runtime's state directly; it reads typed snapshots (internal/jobstatus)
// and asks for checkpoints, savepoints and stops through the job's
// jobstatus.Control, the one write path. It does not import
// internal/runtime (checked by internal/archtest).
package rest
