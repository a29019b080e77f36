package app

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/config"
)

// restSecurity reads the token file and the savepoint keys, defaults the
// savepoint folder, and warns about remote access without a token.
func TestRESTSecurity(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	c := config.New()
	s, err := restSecurity(c, "/state/savepoints", true, log)
	if err != nil || s.token != "" || s.savepointsDir != "/state/savepoints" || s.allowAny {
		t.Fatalf("defaults: %+v %v", s, err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), config.RESTTokenFile) {
		t.Errorf("remote access without a token: no warning naming %s: %s", config.RESTTokenFile, logs.String())
	}
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte(" abc \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{config.RESTTokenFile: tok, config.SavepointsDir: "rel", config.RESTSavepointsAllowAnyTarget: "true"} {
		if err := c.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	logs.Reset()
	s, err = restSecurity(c, "/state/savepoints", true, log)
	if wd, _ := os.Getwd(); err != nil || s.token != "abc" || s.savepointsDir != filepath.Join(wd, "rel") || !s.allowAny || logs.Len() != 0 {
		t.Fatalf("set: %+v %v; logs %s", s, err, logs.String())
	}
	if err := c.Set(config.RESTTokenFile, filepath.Join(dir, "missing")); err != nil {
		t.Fatal(err)
	}
	if _, err := restSecurity(c, "", false, log); err == nil || !strings.Contains(err.Error(), config.RESTTokenFile) {
		t.Errorf("missing token file: %v", err)
	}
}
