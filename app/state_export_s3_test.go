package app

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/vfs"
	"github.com/weirstream/weir/internal/vfs/s3fs/s3test"
)

// upload copies the local tree src to dst on fsys.
func upload(t *testing.T, fsys vfs.FS, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := fsys.Create(dst + "/" + filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStateExportS3 exports checkpoints from an in-process S3 server,
// configured as run configures S3 (-D s3.* keys, or the AWS_* environment):
// the same lines as exporting the local copies, for a savepoint folder and
// for an incremental checkpoint whose stores' files lie in the job's
// shared folder; a missing location is a usage error naming --from, and
// refused credentials fail naming the key.
func TestStateExportS3(t *testing.T) {
	srv := s3test.Start(t, "ckpt")
	fsys := srv.FS(t)
	sp := savepointForExport(t)
	upload(t, fsys, sp, "/ckpt/sp")
	upload(t, fsys, goldenDir("lsm-incremental-v3", "golden"), "/ckpt/jobs/golden")
	var defs []string
	for k, v := range srv.Settings() {
		defs = append(defs, "-D", k+"="+v)
	}
	export := func(env map[string]string, args ...string) (int, string, string) {
		p, stdout, stderr := testProgram(env)
		code := p.Run(context.Background(), append([]string{"state", "export"}, args...))
		return code, stdout.String(), stderr.String()
	}
	for _, c := range []struct{ remote, local string }{
		{"s3://ckpt/sp", sp},
		{"s3://ckpt/jobs/golden/chk-1", goldenDir("lsm-incremental-v3", "golden", "chk-1")},
		{"s3://ckpt/jobs/golden/chk-1/_metadata", goldenDir("lsm-incremental-v3", "golden", "chk-1")},
	} {
		t.Run(strings.TrimPrefix(c.remote, "s3://"), func(t *testing.T) {
			code, got, errOut := export(nil, append([]string{"--from", c.remote}, defs...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if want := exportOK(t, "--from", c.local); got != want || want == "" {
				t.Fatalf("export from S3:\n%s\nexport of the local copy:\n%s", got, want)
			}
		})
	}
	t.Run("environment", func(t *testing.T) {
		cfg := srv.Config()
		env := map[string]string{"AWS_ENDPOINT_URL_S3": cfg.Endpoint, "AWS_REGION": cfg.Region, "AWS_ACCESS_KEY_ID": cfg.AccessKey, "AWS_SECRET_ACCESS_KEY": cfg.SecretKey}
		code, got, errOut := export(env, "--from", "s3://ckpt/sp", "--state", "pos", "-D", "s3.path.style.access=true")
		if code != 0 || !strings.Contains(got, `"state":"pos"`) {
			t.Fatalf("exit %d: %s\n%s", code, got, errOut)
		}
	})
	t.Run("missing", func(t *testing.T) {
		code, _, errOut := export(nil, append([]string{"--from", "s3://ckpt/nope/chk-1"}, defs...)...)
		if code != 2 || !strings.Contains(errOut, "--from s3://ckpt/nope/chk-1: no such file or folder") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	})
	t.Run("wrong-key", func(t *testing.T) {
		args := append([]string{"--from", "s3://ckpt/sp"}, defs...)
		args = append(args, "-D", "s3.access-key=someone-else")
		code, _, errOut := export(nil, args...)
		if code != 1 || !strings.Contains(errOut, "ckpt") || !strings.Contains(strings.ToLower(errOut), "access key") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	})
}
