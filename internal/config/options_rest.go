package config

// REST API keys (docs/rest.md, "Security"). They are read by the process
// that serves the API (weir jobmanager, a local run with --rest-address),
// not by a submitted job, so a job's own -D of them changes nothing on a
// cluster.
const (
	// SavepointsDir is Flink's key: the folder savepoints requested
	// through the REST API or the CLI go under.
	SavepointsDir = "state.savepoints.dir"
	// RESTSavepointsAllowAnyTarget lets a REST request name any folder.
	RESTSavepointsAllowAnyTarget = "rest.savepoints.allow-any-target"
	// RESTTokenFile names the file whose first line is the REST API's
	// bearer token.
	RESTTokenFile = "security.rest.token-file"
)

func restOptions() []Option {
	return []Option{
		{Key: SavepointsDir, Default: "", Kind: KindString,
			FallbackKeys: []string{"execution.checkpointing.savepoint-dir"},
			Description:  "Folder (local path or s3:// URI) that savepoints requested through the REST API or the CLI go under: a relative target is a name under it (resolved by the serving process, not in the client's working directory), an absolute one must lie inside it; a target with .. or a symbolic link out of it is refused with 400. Defaults: weir jobmanager <--state-dir>/savepoints; a local run with --rest-address <state.checkpoints.dir>/savepoints."},
		{Key: RESTSavepointsAllowAnyTarget, Default: "false", Kind: KindBool,
			Description: "weir: let a savepoint request through the REST API name any absolute target folder the process can write, not only folders under state.savepoints.dir (a relative target still goes under it). Only for APIs that nobody untrusted reaches."},
		{Key: RESTTokenFile, Default: "", Kind: KindString,
			Description: "weir: file whose first line is the REST API's bearer token; when set, every request but GET /healthz and /readyz must carry Authorization: Bearer <token> or gets 401. Clients (weir savepoint, stop, … over REST) send it too."},
	}
}
