package cluster

import (
	"context"
	"log/slog"
	"net"
	"time"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/dataflow"
	"github.com/weirstream/weir/internal/deployment"
	"github.com/weirstream/weir/internal/faults"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/internal/security"
)

// Resolver builds a job's graph and configuration from its spec with the
// binary's own job registry (application mode: every role runs the same
// binary and builds the graph itself). The app layer implements it: it
// makes a weir.Env from spec.Config, runs the builder named spec.Kind on
// spec.Args and resolves the Env's plan without running it (internal/hooks).
// It must be a pure function of the spec.
type Resolver func(ctx context.Context, spec deployment.JobSpec) (*dataflow.Graph, runtime.JobConfig, error)

// JobManagerConfig configures a JobManager process (weir jobmanager).
type JobManagerConfig struct {
	// RPCAddress is where TaskManagers and clients reach the JobManager
	// (--rpc-address, 127.0.0.1:6123).
	RPCAddress string
	// RESTAddress serves the REST API and /metrics (--rest-address,
	// 127.0.0.1:8081); "" turns REST off.
	RESTAddress string
	// RESTTLS, if set, serves the REST API over https
	// (security.ssl.rest.*); nil is http.
	RESTTLS *security.REST
	// AllowNonLoopbackREST lets RESTAddress bind beyond loopback.
	AllowNonLoopbackREST bool
	// RESTToken, if set, is the bearer token every REST request but
	// /healthz and /readyz must carry (security.rest.token-file).
	RESTToken string
	// SavepointsDir is where REST-requested savepoints may go
	// (state.savepoints.dir); AllowAnySavepointTarget lifts the check
	// (rest.savepoints.allow-any-target).
	SavepointsDir           string
	AllowAnySavepointTarget bool
	// RESTConfig is the configuration GET /jobmanager/config shows.
	RESTConfig *config.Config
	// StateDir holds submitted jobs and, unless a job sets
	// state.checkpoints.dir, their checkpoints (--state-dir). A JobManager
	// restarted on the same folder recovers its unfinished jobs.
	StateDir string
	// Resolve builds jobs from their specs.
	Resolve Resolver
	// BuildID is this process's build; TaskManagers of another are refused.
	BuildID string
	// HeartbeatInterval, HeartbeatTimeout (heartbeat.interval/timeout) and
	// SlotRequestTimeout (slot.request.timeout, 5m: how long a job waits
	// for slots before it fails); zero means the default.
	HeartbeatInterval  time.Duration
	HeartbeatTimeout   time.Duration
	SlotRequestTimeout time.Duration
	// TLS, if set, serves the RPC with mutual TLS
	// (security.ssl.internal.*), the standby's under high availability
	// too; nil is plain TCP.
	TLS *TLS
	// Logger (nil: silent).
	Logger *slog.Logger
	// Ready, if set, is called once the RPC (and REST) listeners are bound.
	Ready func(rpc, rest net.Addr)

	// HA, if set, runs the JobManager under high availability
	// (high-availability.type: etcd): it serves as a standby until it is
	// elected, keeps job records and checkpoint registrations in HA, and
	// stands by again when it loses the leadership.
	HA HA
	// ID names the JobManager to the others under high availability (""
	// picks jm-<random>).
	ID string
	// CrashPoint, if set, is called at the JobMaster's named crash points
	// (runtime's CrashPoint names); tests make it kill the process.
	CrashPoint func(name string)
	// Reactive, if set, runs the JobManager in reactive mode
	// (scheduler-mode: reactive): its one job runs on every slot, scales
	// up as TaskManagers register and down when slots stay lost for the
	// wait timeout (docs/rescaling.md, "Reactive mode"). nil: jobs run at
	// the parallelism they were submitted with.
	Reactive *ReactiveConfig
}

// RunJobManager runs a JobManager until ctx ends: the Dispatcher for
// TaskManagers and clients, one JobMaster per submitted job, REST and
// metrics. It fails at once naming the flag when a port is in use or the
// state folder cannot be written. Jobs that still run when ctx ends are
// stopped but stay recorded as running: a JobManager started again on the
// same state folder recovers them from their newest checkpoints.
func RunJobManager(ctx context.Context, cfg JobManagerConfig) error {
	return runJobManager(ctx, cfg)
}

// TaskManagerProcessConfig configures a TaskManager process (weir
// taskmanager).
type TaskManagerProcessConfig struct {
	// JobManager is the JobManager's rpc address (--jobmanager), or a
	// comma-separated list of several JobManagers' (high availability).
	JobManager string
	// Locate and LeaderTerms find the leader and follow its terms under
	// high availability (from etcd); see TaskManagerConfig. nil: the
	// JobManager list alone.
	Locate      func(ctx context.Context) ([]string, error)
	LeaderTerms func(ctx context.Context) <-chan int64
	// Slots is the number of task slots offered (--slots, at least 1).
	Slots int
	// DataAddress is where the data plane listens (--data-address;
	// "" is 127.0.0.1 on a free port).
	DataAddress string
	// MetricsAddress serves Prometheus /metrics (--metrics-address; ""
	// takes the first free port of 127.0.0.1:9249-9260, "-" turns it off).
	MetricsAddress string
	// ResourceID names the process ("" picks tm-<random>).
	ResourceID string
	// Resolve builds jobs from their specs.
	Resolve Resolver
	// BuildID is this process's build.
	BuildID string
	// RegistrationTimeout is taskmanager.registration.timeout (5m).
	RegistrationTimeout time.Duration
	// CancellationTimeout is task.cancellation.timeout (3m): a task still
	// running this long after its cancellation makes the TaskManager exit
	// with an error naming it.
	CancellationTimeout time.Duration
	// TLS, if set, dials the JobManager and serves and dials the data
	// plane with mutual TLS (security.ssl.internal.*); nil is plain TCP.
	TLS *TLS
	// PeerTimeout is heartbeat.timeout: a data connection to another
	// TaskManager silent this long is closed as broken
	// (remote.Config.PeerTimeout).
	PeerTimeout time.Duration
	// Faults, if set, replaces every job's fault injector on this
	// TaskManager: a test hook (faults.NewCrash) that ends the process at
	// a protocol point; nil in production.
	Faults *faults.Injector
	// Logger (nil: silent).
	Logger *slog.Logger
	// Ready, if set, is called once the data plane (and metrics) listen.
	Ready func(data, metrics net.Addr)
}

// RunTaskManagerProcess runs a TaskManager until ctx ends, the JobManager
// rejects it, or the JobManager stays unreachable for the registration
// timeout: it registers its slots, runs the tasks it is deployed and
// exchanges data with other TaskManagers.
func RunTaskManagerProcess(ctx context.Context, cfg TaskManagerProcessConfig) error {
	return runTaskManagerProcess(ctx, cfg)
}
