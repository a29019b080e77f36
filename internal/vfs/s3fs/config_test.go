package s3fs_test

import (
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/vfs/s3fs"
)

func TestConfigFrom(t *testing.T) {
	env := func(kv map[string]string) func(string) string {
		return func(k string) string { return kv[k] }
	}
	set := func(kv map[string]string) *config.Config {
		c := config.New()
		for k, v := range kv {
			if err := c.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	awsEnv := map[string]string{
		"AWS_ENDPOINT_URL": "http://generic:1", "AWS_ENDPOINT_URL_S3": "http://s3only:2",
		"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "us-west-2",
		"AWS_ACCESS_KEY_ID": "envkey", "AWS_SECRET_ACCESS_KEY": "envsecret", "AWS_SESSION_TOKEN": "envtoken",
	}
	// The environment fills what configuration leaves unset.
	cfg, err := s3fs.ConfigFrom(config.New(), env(awsEnv))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Endpoint != "http://s3only:2" || cfg.Region != "eu-west-1" || cfg.AccessKey != "envkey" || cfg.SecretKey != "envsecret" || cfg.SessionToken != "envtoken" || cfg.PathStyle {
		t.Fatalf("from env: %+v", cfg)
	}
	// Configuration wins, Flink's spellings included.
	cfg, err = s3fs.ConfigFrom(set(map[string]string{
		"s3.endpoint": "minio:9000", "s3.endpoint.region": "ap-south-1",
		"s3.access.key": "cfgkey", "s3.secret-key": "cfgsecret", "s3.path-style-access": "true",
		"s3.connection.ssl.enabled": "false",
	}), env(awsEnv))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Endpoint != "http://minio:9000" || cfg.Region != "ap-south-1" || cfg.AccessKey != "cfgkey" || cfg.SecretKey != "cfgsecret" || cfg.SessionToken != "" || !cfg.PathStyle {
		t.Fatalf("from config: %+v", cfg)
	}
	// An endpoint without a scheme gets https by default.
	cfg, err = s3fs.ConfigFrom(set(map[string]string{"s3.endpoint": "s3.example.com"}), env(nil))
	if err != nil || cfg.Endpoint != "https://s3.example.com" {
		t.Fatalf("default scheme: %+v %v", cfg, err)
	}
	for _, tc := range []struct {
		cfg  map[string]string
		env  map[string]string
		want string
	}{
		{cfg: map[string]string{"s3.access-key": "k"}, want: "set both s3.access-key and s3.secret-key"},
		{env: map[string]string{"AWS_SECRET_ACCESS_KEY": "s"}, want: "set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"},
		{cfg: map[string]string{"s3.endpoint": "https://x", "s3.connection.ssl.enabled": "false"}, want: "contradicts s3.connection.ssl.enabled=false"},
		{cfg: map[string]string{"s3.endpoint": "ftp://x"}, want: "neither http nor https"},
		{cfg: map[string]string{"s3.endpoint": "http://x/bucket"}, want: "without a path"},
	} {
		_, err := s3fs.ConfigFrom(set(tc.cfg), env(tc.env))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: got %v, want an error containing %q", tc.cfg, tc.env, err, tc.want)
		}
	}
}
