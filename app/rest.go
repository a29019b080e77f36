package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/pflag"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/dashboard"
	"github.com/weirstream/weir/internal/hooks"
	"github.com/weirstream/weir/internal/jobstatus"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/rest"
)

// restFlags are the REST API flags of a local run.
type restFlags struct {
	address     string
	allowRemote bool
}

func (f *restFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.address, "rest-address", "", "serve the REST API and Prometheus /metrics on HOST:PORT while the job runs, e.g. 127.0.0.1:8081 (empty: off; on a cluster the JobManager serves it: jobmanager --rest-address)")
	fs.BoolVar(&f.allowRemote, "rest-allow-remote", false, "allow a --rest-address other hosts can reach (the API can trigger checkpoints and savepoints: set security.rest.token-file too)")
}

// envJob is the job of an Env as the REST API sees it; in local mode the
// job's id is its name.
type envJob struct {
	name   string
	env    *weir.Env
	cancel func()
}

func (j envJob) ID() string                   { return j.name }
func (j envJob) Name() string                 { return j.name }
func (j envJob) Status() *jobstatus.JobStatus { return jobStatus(j.env) }
func (j envJob) Control() jobstatus.Control   { return hooks.Plan(j.env).Control }
func (j envJob) Config() *config.Config       { return hooks.Config(j.env.Config()) }

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
	conf := hooks.Config(env.Config())
	// A local run's state folder is its checkpoint folder (weir run
	// --state-dir sets state.checkpoints.dir): savepoints default under it.
	var defaultSavepoints string
	if d := conf.String(config.CheckpointsDir); d != "" {
		defaultSavepoints = strings.TrimSuffix(d, "/") + "/savepoints"
		if !strings.Contains(d, "://") {
			defaultSavepoints = filepath.Join(d, "savepoints")
			if abs, err := filepath.Abs(defaultSavepoints); err == nil {
				defaultSavepoints = abs
			}
		}
	}
	sec, err := restSecurity(conf, defaultSavepoints, f.allowRemote, logger)
	if err != nil {
		ln.Close()
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := metrics.NewJob(reg, job, job, jobStatus(env), metrics.Options{Weak: weakMode(env.Config())})
	if err != nil {
		ln.Close()
		return nil, err
	}
	j := envJob{name: job, env: env, cancel: cancel}
	h := rest.NewHandler(rest.Config{
		Jobs:    func() []rest.Job { return []rest.Job{j} },
		Metrics: metrics.Handler(reg, logger),
		Logger:  logger,
		Version: version(),
		UI:      dashboard.Handler(),

		ClusterConfig:           conf,
		SavepointsDir:           sec.savepointsDir,
		AllowAnySavepointTarget: sec.allowAny,
		Token:                   sec.token,
	})
	srv := rest.Serve(ln, h, logger)
	fmt.Fprintf(stderr, "REST API listening on %s\n", srv.Addr())
	return func() {
		// A client polling a stop or savepoint (weir stop) gets its result
		// before the API goes away with the run.
		wait, cancelWait := context.WithTimeout(context.Background(), 5*time.Second)
		h.AwaitPolled(wait)
		cancelWait()
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

// restToken reads security.rest.token-file of c: the token a client
// sends and a server requires; "" if the key is not set.
func restToken(c *config.Config) (string, error) {
	path := c.String(config.RESTTokenFile)
	if path == "" {
		return "", nil
	}
	tok, err := rest.ReadTokenFile(path)
	if err != nil {
		return "", Usagef("%v", err)
	}
	return tok, nil
}

// restSecurityConfig is what a REST API server reads from the
// configuration: its token and where savepoints may go.
type restSecurityConfig struct {
	token         string
	savepointsDir string
	allowAny      bool
}

// restSecurity reads the REST API's security keys of c.
// defaultSavepoints is state.savepoints.dir when the key is not set (""
// for none: then savepoint requests are refused naming the key). Remote
// access without a token logs a warning: anyone who reaches the address
// may trigger savepoints and cancel jobs.
func restSecurity(c *config.Config, defaultSavepoints string, allowRemote bool, logger *slog.Logger) (restSecurityConfig, error) {
	tok, err := restToken(c)
	if err != nil {
		return restSecurityConfig{}, err
	}
	s := restSecurityConfig{token: tok, savepointsDir: c.String(config.SavepointsDir), allowAny: c.Bool(config.RESTSavepointsAllowAnyTarget)}
	if s.savepointsDir == "" {
		s.savepointsDir = defaultSavepoints
	} else if !strings.Contains(s.savepointsDir, "://") {
		abs, err := filepath.Abs(s.savepointsDir)
		if err != nil {
			return restSecurityConfig{}, Usagef("%s %s: %v", config.SavepointsDir, s.savepointsDir, err)
		}
		s.savepointsDir = abs
	}
	if allowRemote && tok == "" && logger != nil {
		logger.Warn("the REST API is reachable from other hosts (--rest-allow-remote) without authentication: anyone who reaches it can trigger savepoints and cancel jobs; set " + config.RESTTokenFile)
	}
	return s, nil
}
