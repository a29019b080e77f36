package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/cluster"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/hooks"
)

// roleFlags are the flags both roles share.
type roleFlags struct {
	config  configFlags
	verbose bool
}

func (f *roleFlags) register(c *cobra.Command) {
	f.config.register(c.Flags())
	c.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "log at debug level")
}

// load reads the configuration and its cluster keys.
func (f *roleFlags) load() (*weir.Config, config.ClusterTiming, error) {
	cfg, err := f.config.load()
	if err != nil {
		return nil, config.ClusterTiming{}, err
	}
	t, err := hooks.Config(cfg).Cluster()
	if err != nil {
		return nil, config.ClusterTiming{}, Usagef("configuration: %v", err)
	}
	return cfg, t, nil
}

// reactiveConfig is the JobManager's reactive mode, nil when
// scheduler-mode is not reactive.
func reactiveConfig(s config.SchedulerSettings) *cluster.ReactiveConfig {
	if !s.Reactive {
		return nil
	}
	return &cluster.ReactiveConfig{
		Stabilization: s.Stabilization,
		WaitTimeout:   s.WaitTimeout,
		MinIncrease:   s.MinIncrease,
		// A refused rescale (a checkpoint that failed) is tried again
		// once the slots have had time to settle.
		RetryDelay: max(s.Stabilization, time.Second),
	}
}

// logger is a role's logger, with repeated warnings aggregated; end
// writes the pending summaries when the role stops.
func (f *roleFlags) logger(p *Program) (log *slog.Logger, end func()) {
	level := slog.LevelInfo
	if f.verbose || p.getenv("WEIR_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return aggregated(slog.NewTextHandler(p.stderr(), &slog.HandlerOptions{Level: level}))
}

// buildID returns the injected build id or the executable's.
func (p *Program) buildID() (string, error) {
	if p.BuildID != "" {
		return p.BuildID, nil
	}
	return cluster.ExecutableBuildID()
}

// signalContext ends on SIGINT or SIGTERM: a role stops cleanly.
func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

func (p *Program) jobManagerCommand() *cobra.Command {
	var (
		rf          roleFlags
		rpcAddr     string
		restAddr    string
		allowRemote bool
		stateDir    string
		jmID        string
	)
	c := &cobra.Command{
		Use:   "jobmanager",
		Short: "Run the JobManager: accepts TaskManagers and jobs, schedules, checkpoints and recovers them",
		Long: `jobmanager runs the cluster's JobManager: TaskManagers register with it on
--rpc-address and clients (run --jobmanager, list, cancel, checkpoints) call
it there; the REST API and /metrics are on --rest-address. Submitted jobs and,
unless a job sets state.checkpoints.dir, their checkpoints live in
--state-dir: a JobManager restarted on the same folder recovers its
unfinished jobs. Every TaskManager must reach the checkpoint folder (a shared
mount, or s3://).

Timing keys (-D or --config): heartbeat.interval, heartbeat.timeout,
slot.request.timeout.

Reactive mode (-D scheduler-mode=reactive): the JobManager runs its one job
on every slot: it scales up in place when TaskManagers register and, when
slots stay lost for jobmanager.adaptive-scheduler.resource-wait-timeout,
down to the slots that remain (docs/rescaling.md, "Reactive mode").

High availability (-D or --config): with high-availability.type: etcd,
high-availability.etcd.endpoints and high-availability.storageDir, start two
or three JobManagers with the same keys: one leads, the others stand by and
take over when it goes away. Job records live in etcd and checkpoints under
high-availability.storageDir (docs/cluster.md, "High availability").`,
		Args:        cobra.NoArgs,
		Annotations: envAnnotation,
		RunE: func(c *cobra.Command, _ []string) error {
			conf, t, err := rf.load()
			if err != nil {
				return err
			}
			sched, err := hooks.Config(conf).Scheduler()
			if err != nil {
				return Usagef("configuration: %v", err)
			}
			if _, _, err := net.SplitHostPort(rpcAddr); err != nil {
				return Usagef("--rpc-address %q: want HOST:PORT, e.g. 127.0.0.1:6123", rpcAddr)
			}
			if stateDir == "" {
				return Usagef("--state-dir is empty: give the folder for jobs and checkpoints")
			}
			dir, err := filepath.Abs(stateDir)
			if err != nil {
				return Usagef("--state-dir %s: %v", stateDir, err)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return Usagef("--state-dir %s: cannot create the folder: %v", stateDir, err)
			}
			id, err := p.buildID()
			if err != nil {
				return err
			}
			ctx, stop := signalContext(c.Context())
			defer stop()
			log, endLog := rf.logger(p)
			defer endLog()
			haServices, closeHA, err := jobManagerHA(ctx, hooks.Config(conf), log)
			if err != nil {
				return err
			}
			if closeHA != nil {
				defer closeHA()
			}
			crash, err := p.crashPoint(log)
			if err != nil {
				return err
			}
			rpcTLS, err := internalTLS(conf)
			if err != nil {
				return err
			}
			restT, err := restTLS(conf, true)
			if err != nil {
				return err
			}
			sec, err := restSecurity(hooks.Config(conf), filepath.Join(dir, "savepoints"), allowRemote && restAddr != "", log)
			if err != nil {
				return err
			}
			return cluster.RunJobManager(ctx, cluster.JobManagerConfig{
				TLS:                     rpcTLS,
				RESTTLS:                 restT,
				RESTToken:               sec.token,
				SavepointsDir:           sec.savepointsDir,
				AllowAnySavepointTarget: sec.allowAny,
				RESTConfig:              hooks.Config(conf),
				HA:                      haServices,
				ID:                      jmID,
				CrashPoint:              crash,
				RPCAddress:              rpcAddr,
				RESTAddress:             restAddr,
				AllowNonLoopbackREST:    allowRemote,
				StateDir:                dir,
				Resolve:                 p.resolve,
				BuildID:                 id,
				HeartbeatInterval:       t.HeartbeatInterval,
				HeartbeatTimeout:        t.HeartbeatTimeout,
				SlotRequestTimeout:      t.SlotRequestTimeout,
				Reactive:                reactiveConfig(sched),
				Logger:                  log,
				Ready: func(rpc, rest net.Addr) {
					if rest != nil {
						log.Info("JobManager ready", "rpc", rpc.String(), "rest", rest.String())
					} else {
						log.Info("JobManager ready", "rpc", rpc.String())
					}
				},
			})
		},
	}
	fs := c.Flags()
	fs.StringVar(&rpcAddr, "rpc-address", "127.0.0.1:6123", "HOST:PORT for TaskManagers and clients")
	fs.StringVar(&restAddr, "rest-address", "127.0.0.1:8081", "HOST:PORT for the REST API and Prometheus /metrics (empty: off)")
	fs.BoolVar(&allowRemote, "rest-allow-remote", false, "allow a --rest-address other hosts can reach (set security.rest.token-file too: without it the API has no authentication)")
	fs.StringVar(&stateDir, "state-dir", "./weir-cluster", "folder for submitted jobs and, by default, their checkpoints; a JobManager restarted on it recovers unfinished jobs")
	MarkPath(fs, "state-dir")
	fs.StringVar(&jmID, "id", "", "this JobManager's name among the JobManagers of a highly available cluster (default jm-<random>)")
	rf.register(c)
	return c
}

func (p *Program) taskManagerCommand() *cobra.Command {
	var (
		rf          roleFlags
		jobmanager  string
		slots       int
		dataAddr    string
		metricsAddr string
		resourceID  string
	)
	c := &cobra.Command{
		Use:   "taskmanager",
		Short: "Run a TaskManager: offers task slots to the JobManager and runs the tasks it deploys",
		Long: `taskmanager registers --slots task slots with the JobManager at --jobmanager,
runs the tasks deployed to it and exchanges records with other TaskManagers
on --data-address. When the JobManager is lost it cancels its tasks and
registers again with backoff for taskmanager.registration.timeout (5m),
then exits 1.

High availability: --jobmanager takes a comma-separated list of
JobManagers; a standby sends the TaskManager to the leader. With
high-availability.type: etcd (--config or -D, with
high-availability.etcd.endpoints and high-availability.cluster-id as the
JobManagers have them) the leader is found in etcd, and a new leader term
there ends the session with the deposed leader at once; --jobmanager is
then tried after etcd's answer, and only if given.

Slot i runs subtask i of every operator: a job needs as many slots as its
largest parallelism, over all TaskManagers.`,
		Args:        cobra.NoArgs,
		Annotations: envAnnotation,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, t, err := rf.load()
			if err != nil {
				return err
			}
			if !c.Flags().Changed("slots") {
				slots = t.Slots
			}
			if slots < 1 {
				return Usagef("--slots must be at least 1, got %d: a TaskManager without slots runs nothing", slots)
			}
			rpcTLS, err := internalTLS(cfg)
			if err != nil {
				return err
			}
			haOn := hooks.Config(cfg).String(config.HAType) == config.HATypeEtcd
			list, err := jobManagerList(c.Flags(), jobmanager, haOn)
			if err != nil {
				return err
			}
			id, err := p.buildID()
			if err != nil {
				return err
			}
			ctx, stop := signalContext(c.Context())
			defer stop()
			log, endLog := rf.logger(p)
			defer endLog()
			var locate func(context.Context) ([]string, error)
			var terms func(context.Context) <-chan int64
			h, err := connectHA(ctx, cfg, log)
			if err != nil {
				return err
			}
			if h != nil {
				defer h.Close()
				locate, terms = h.Locate, h.LeaderTerms
			}
			crash, err := p.taskManagerCrash(log)
			if err != nil {
				return err
			}
			return cluster.RunTaskManagerProcess(ctx, cluster.TaskManagerProcessConfig{
				Faults:              crash,
				TLS:                 rpcTLS,
				JobManager:          list,
				Locate:              locate,
				LeaderTerms:         terms,
				Slots:               slots,
				DataAddress:         dataAddr,
				MetricsAddress:      metricsAddr,
				ResourceID:          resourceID,
				Resolve:             p.resolve,
				BuildID:             id,
				RegistrationTimeout: t.RegistrationTimeout,
				CancellationTimeout: t.CancellationTimeout,
				PeerTimeout:         t.HeartbeatTimeout,
				Logger:              log,
				Ready: func(data, metrics net.Addr) {
					attrs := []any{"slots", slots}
					if data != nil {
						attrs = append(attrs, "data", data.String())
					}
					if metrics != nil {
						attrs = append(attrs, "metrics", metrics.String())
					}
					log.Info("TaskManager ready", attrs...)
				},
			})
		},
	}
	fs := c.Flags()
	fs.StringVar(&jobmanager, "jobmanager", "127.0.0.1:6123", jobManagerUsage)
	fs.IntVar(&slots, "slots", 1, fmt.Sprintf("task slots to offer (default: %s, 1)", config.TaskManagerNumberOfTaskSlots))
	fs.StringVar(&dataAddr, "data-address", "", "HOST:PORT for the data plane (empty: 127.0.0.1 on a free port)")
	fs.StringVar(&metricsAddr, "metrics-address", "", `HOST:PORT for Prometheus /metrics (empty: the first free of 127.0.0.1:9249-9260; "-": off)`)
	fs.StringVar(&resourceID, "resource-id", "", "this TaskManager's name in the cluster (empty: tm-<random>)")
	rf.register(c)
	return c
}
