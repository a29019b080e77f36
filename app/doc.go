// Package app turns a Go program into a weir cluster application: one
// binary that can run its jobs locally, submit them to a JobManager, or
// serve as the JobManager or a TaskManager that builds them (Flink's
// application mode; docs/cluster.md).
//
// Closures cannot travel between processes, so every role builds a job's
// graph itself from the same description: the job's kind, its arguments
// and its configuration (the job spec a client submits). A Job registers its own flags
// and returns a Run whose Build declares the graph from the flag values
// and env.Config(); it must be a pure function of them (no clock, unseeded
// randomness or host-local state), so that every process builds the same
// graph. app decides the rest:
//
//	func main() {
//		app.Main(app.Job{
//			Name:  "keyedcount",
//			Short: "Count events per key into files",
//			Define: func(fs *pflag.FlagSet) app.Run {
//				var o options
//				fs.Int64Var(&o.events, "events", 1_000_000, "events to generate")
//				fs.StringVar(&o.out, "out", "out", "folder for the committed files")
//				app.MarkPath(fs, "out") // made absolute before submitting
//				return app.Run{Build: func(env *weir.Env) error { return build(env, o) }}
//			},
//		})
//	}
//
// gives
//
//	prog run keyedcount [job flags] [--jobmanager HOST:PORT [--detached]]
//	prog jobmanager --rpc-address 127.0.0.1:6123 --rest-address 127.0.0.1:8081 --state-dir DIR
//	prog taskmanager --jobmanager HOST:PORT[,HOST:PORT…] --slots N [--data-address A] [--metrics-address A]
//	prog list | cancel JOB | checkpoints JOB   [--jobmanager HOST:PORT[,…] | --rest-address HOST:PORT] [--config FILE] [-D k=v]
//	prog savepoint JOB --target DIR | stop JOB [--savepoint DIR]   [same addressing]
//
// Without --jobmanager, run builds and executes the job in process, with
// the REST API and /metrics on --rest-address, a progress line (unless
// --quiet) and a summary; it says first whether the job starts from
// scratch or resumes a checkpoint, and discards the job's checkpoints once
// it FINISHED, so running it again starts from scratch (docs/guarantees.md).
// With --jobmanager, run normalises the arguments (relative paths made
// absolute, seeds chosen, client-only flags dropped), builds the job once
// locally to catch mistakes before submitting, submits the spec, follows
// the job and exits 0 when it FINISHED, 1 otherwise (--detached prints the
// job id and returns). The JobManager and TaskManagers build the graph the
// same way, from the submitted spec.
//
// Every flag of these commands also reads WEIR_<FLAG> (WEIR_JOBMANAGER,
// WEIR_SLOTS, WEIR_STATE_DIR, …) when not given, and WEIR_ROLE=jobmanager
// or WEIR_ROLE=taskmanager selects a role when the program is started
// without arguments, so one container image serves every role.
//
// Exit codes: 0 success, 1 the job or the process failed, 2 bad usage or
// configuration (UsageError, reported before any work starts).
//
// Owns: the command line of every weir program: roles, client commands,
// flags and their WEIR_ environment variables, exit codes, and a local
// run's REST API, metrics, progress line and summary. Must not touch: the
// runtime's rules; it builds Envs, resolves their plans and talks to
// JobManagers.
package app
