package config

// S3 client keys, for checkpoint storage on state.checkpoints.dir:
// s3://bucket/prefix. The names are Flink's (its S3 filesystems forward s3.*
// keys to the client); the other spellings Flink users write are accepted
// as fallbacks. What is not set here comes from the standard AWS
// environment variables (see internal/vfs/s3fs).
const (
	S3Endpoint     = "s3.endpoint"
	S3Region       = "s3.region"
	S3AccessKey    = "s3.access-key"
	S3SecretKey    = "s3.secret-key"
	S3SessionToken = "s3.session-token"
	S3PathStyle    = "s3.path.style.access"
	S3SSLEnabled   = "s3.connection.ssl.enabled"
)

func s3Options() []Option {
	return []Option{
		{Key: S3Endpoint, Default: "", Kind: KindString,
			FallbackKeys: []string{"fs.s3a.endpoint"},
			Description:  "S3 endpoint, http(s)://host[:port] (a MinIO or other S3-compatible service); empty: AWS, or AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL."},
		{Key: S3Region, Default: "", Kind: KindString,
			FallbackKeys: []string{"s3.endpoint.region", "fs.s3a.endpoint.region"},
			Description:  "S3 region that signs requests; empty: AWS_REGION / AWS_DEFAULT_REGION, else asked from the bucket."},
		{Key: S3AccessKey, Default: "", Kind: KindString,
			FallbackKeys: []string{"s3.access.key", "fs.s3a.access.key"},
			Description:  "S3 access key id; empty: AWS_ACCESS_KEY_ID, else the shared credentials file or the IAM role."},
		{Key: S3SecretKey, Default: "", Kind: KindString,
			FallbackKeys: []string{"s3.secret.key", "fs.s3a.secret.key"},
			Description:  "S3 secret access key, set together with s3.access-key; empty: AWS_SECRET_ACCESS_KEY."},
		{Key: S3SessionToken, Default: "", Kind: KindString,
			FallbackKeys: []string{"s3.session.token", "fs.s3a.session.token"},
			Description:  "S3 session token of temporary credentials; empty: AWS_SESSION_TOKEN."},
		{Key: S3PathStyle, Default: "false", Kind: KindBool,
			FallbackKeys: []string{"s3.path-style-access", "fs.s3a.path.style.access"},
			Description:  "Address buckets in the path (host/bucket/key) instead of the host name; most self-hosted S3 services need true."},
		{Key: S3SSLEnabled, Default: "true", Kind: KindBool,
			FallbackKeys: []string{"s3.ssl.enabled", "fs.s3a.connection.ssl.enabled"},
			Description:  "Use https for an s3.endpoint given without a scheme."},
	}
}
