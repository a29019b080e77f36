// Package archtest holds the tests that keep weir's layers apart; it has no
// code of its own.
//
// The rules it checks, each the reason a doc.go elsewhere says what its
// package must not touch:
//
//   - The protocol cores are pure state machines (docs/architecture.md,
//     "Design rules", 1): internal/checkpoint and its barrier,
//     coordinator and registry, internal/failover, internal/twophase,
//     internal/network/credit, internal/heartbeat, internal/restart,
//     internal/jobmaster, internal/watermark, internal/window,
//     internal/ha/role and internal/weak import only a small set of
//     standard packages and each other, start no goroutine and read no
//     clock (time arrives as an event). Tests can then replay any
//     interleaving deterministically.
//   - Lower layers do not reach up: state, codec, network, checkpoint,
//     config, vfs, the cores, the job's read model (internal/jobstatus)
//     and the deployment vocabulary (internal/deployment) never import the
//     runtime, the cluster, REST, metrics, the public API, app or
//     connectors, so each can be tested and reused without the engine
//     around it; the runtime imports jobstatus and deployment, never the
//     reverse.
//   - A consistency mode that recovers tasks on their own has its runtime
//     in a package of its own (internal/runtime/weakrt for
//     WEAKLY_CONSISTENT), which imports internal/runtime and plugs into it
//     as a runtime.RecoveryMode set on JobConfig.Recovery: the runtime
//     never imports it, the mode's pure core (internal/weak) stays below
//     it as every core does, and only internal/plan, where a job's
//     configuration is resolved, names it.
//   - Only the packages that are jobs, tools or user-facing (internal/jobs,
//     internal/bench, internal/testutil, app, connectors, examples, cmd)
//     import the public package weir: the engine does not depend on its
//     own API.
//   - Test helpers (internal/testutil and below, such as coretest, the
//     pure cores' script and seed scaffolding; kafkatest, etcdtest,
//     s3test, securitytest, deploytest) are imported only by _test.go
//     files, or by another helper: no fake or test flag reaches a binary.
//   - A job's status has readers and writers. The status readers
//     (internal/rest, internal/metrics, internal/dashboard) do not import
//     internal/runtime: they read internal/jobstatus and command a job
//     through jobstatus.Control. Only the writers (internal/runtime, the
//     cluster's JobManager, internal/plan) name jobstatus.Recorder or
//     write one of the status' atomic counters; everyone else Loads them.
//
// A violation names the file, the import or call, and the rule.
package archtest
