package rest

import (
	"net/http"
	"strings"

	"github.com/weirstream/weir/internal/config"
)

// ConfigEntry is one key of GET /jobmanager/config (Flink's
// ClusterConfigurationInfoEntry).
type ConfigEntry struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// ExecutionConfig is the execution-config of GET /jobs/{jobid}/config.
type ExecutionConfig struct {
	ExecutionMode   string `json:"execution-mode"`
	RestartStrategy string `json:"restart-strategy"`
	JobParallelism  int    `json:"job-parallelism"`
	ObjectReuseMode bool   `json:"object-reuse-mode"`
	// UserConfig is every key the job set explicitly, secrets hidden.
	UserConfig map[string]string `json:"user-config"`
}

// JobConfig is the body of GET /jobs/{jobid}/config (Flink's
// JobConfigInfo).
type JobConfig struct {
	JID             string          `json:"jid"`
	Name            string          `json:"name"`
	ExecutionConfig ExecutionConfig `json:"execution-config"`
}

// hidden replaces the values of sensitive keys, as Flink does.
const hidden = "******"

// sensitive reports whether key's value is a secret that the API must not
// show (s3.secret-key, s3.session-token, passwords, …). Paths of secret
// files (…-file) are not secrets.
func sensitive(key string) bool {
	k := strings.ToLower(key)
	if strings.HasSuffix(k, "-file") || strings.HasSuffix(k, ".file") {
		return false
	}
	for _, s := range []string{"password", "secret", "token", "access-key", "apikey", "api-key", "credential"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

func (a *api) jobConfig(w http.ResponseWriter, _ *http.Request, j Job) {
	c := j.Config()
	user := map[string]string{}
	for k, v := range c.Explicit() {
		if sensitive(k) {
			v = hidden
		}
		user[k] = v
	}
	writeJSON(w, http.StatusOK, JobConfig{JID: j.ID(), Name: j.Name(), ExecutionConfig: ExecutionConfig{
		ExecutionMode:   "PIPELINED",
		RestartStrategy: c.String(config.RestartStrategyType),
		JobParallelism:  c.Int(config.ParallelismDefault),
		UserConfig:      user,
	}})
}

// jobManagerConfig answers the process's configuration: every key with
// its effective value, secrets hidden.
func (a *api) jobManagerConfig(w http.ResponseWriter, _ *http.Request) {
	out := []ConfigEntry{}
	if a.cfg.ClusterConfig != nil {
		for _, kv := range a.cfg.ClusterConfig.Entries() {
			v := kv[1]
			if sensitive(kv[0]) && v != "" {
				v = hidden
			}
			out = append(out, ConfigEntry{Key: kv[0], Value: v})
		}
	}
	writeJSON(w, http.StatusOK, out)
}
