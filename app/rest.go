package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/dashboard"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/rest"
	"github.com/weirstream/weir/internal/runtime"
)

// restFlags are the REST API flags of a local run.
type restFlags struct {
	address     string
	allowRemote bool
}

func (f *restFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.address, "rest-address", "", "serve the REST API and Prometheus /metrics on HOST:PORT while the job runs, e.g. 127.0.0.1:8081 (empty: off; on a cluster the JobManager serves it: jobmanager --rest-address)")
	fs.BoolVar(&f.allowRemote, "rest-allow-remote", false, "allow a --rest-address other hosts can reach (the API has no authentication and can trigger checkpoints)")
}

// envJob is the job of an Env as the REST API sees it; in local mode the
// job's id is its name.
type envJob struct {
	name   string
	env    *weir.Env
	cancel func()
}

func (j envJob) ID() string                 { return j.name }
func (j envJob) Name() string               { return j.name }
func (j envJob) Status() *runtime.JobStatus { return jobStatus(j.env) }
func (j envJob) Config() *config.Config     { return hooks.Config(j.env.Config()) }

// Cancel makes the local run cancel its job (rest.Canceler).
func (j envJob) Cancel() { j.cancel() }

// startREST serves the REST API and /metrics for env's job if
// --rest-address is set, and returns the function that stops it. An
// address that is in use or reachable from other hosts is a usage error,
// reported before the job starts.
func (f *restFlags) startREST(env *weir.Env, job string, cancel func(), logger *slog.Logger, stderr io.Writer) (stop func(), err error) {
	if f.address == "" {
		return func() {}, nil
	}
	restT, err := restTLS(env.Config(), true)
	if err != nil {
		return nil, err
	}
	ln, err := rest.Listen(f.address, f.allowRemote)
	if errors.Is(err, rest.ErrRemoteAddress) {
		return nil, Usagef("--rest-address: %v (--rest-allow-remote)", err)
	}
	if err != nil {
		return nil, Usagef("--rest-address: %v", err)
	}
	if restT != nil {
		ln = tls.NewListener(ln, restT.Server)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := metrics.NewJob(reg, job, job, jobStatus(env), metrics.Options{})
	if err != nil {
		ln.Close()
		return nil, err
	}
	j := envJob{name: job, env: env, cancel: cancel}
	srv := rest.Serve(ln, rest.NewHandler(rest.Config{
		Jobs:    func() []rest.Job { return []rest.Job{j} },
		Metrics: metrics.Handler(reg, logger),
		Logger:  logger,
		Version: version(),
		UI:      dashboard.Handler(),
	}), logger)
	fmt.Fprintf(stderr, "REST API listening on %s\n", srv.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			logger.Warn("rest api: shutdown", "error", err)
		}
		m.Unregister()
	}, nil
}

// version is the module version the binary was built from.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.Main.Version
	}
	return "unknown"
}
