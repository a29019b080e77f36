package plan

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/config"
)

// A plan without a logger of the program's passes warnings and errors,
// with the attributes and groups its users added, to the default logger
// as it is when each record is logged, and drops Info and Debug.
func TestDefaultLoggerPassesWarningsToSlogDefault(t *testing.T) {
	p := New(config.New())
	var buf bytes.Buffer
	old := slog.Default()
	defer slog.SetDefault(old)
	// Set after New: the plan must read the default at each record.
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))

	log := p.Logger.With("job", "demo").WithGroup("task").With("subtask", 1)
	log.Info("checkpoint completed", "id", 7)
	log.Debug("detail")
	log.Warn("checkpoint declined", "id", 8)
	log.Error("task failed", "err", "boom")

	out := buf.String()
	if strings.Contains(out, "checkpoint completed") || strings.Contains(out, "detail") {
		t.Errorf("Info or Debug passed through:\n%s", out)
	}
	for _, want := range []string{
		`level=WARN msg="checkpoint declined" job=demo task.subtask=1 task.id=8`,
		`level=ERROR msg="task failed" job=demo task.subtask=1 task.err=boom`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("default logger lacks %q:\n%s", want, out)
		}
	}
}

// A default logger that drops warnings is obeyed.
func TestDefaultLoggerHonoursDefaultLevel(t *testing.T) {
	p := New(config.New())
	var buf bytes.Buffer
	old := slog.Default()
	defer slog.SetDefault(old)
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelError})))
	p.Logger.Warn("checkpoint declined")
	p.Logger.Error("task failed")
	if out := buf.String(); strings.Contains(out, "declined") || !strings.Contains(out, "task failed") {
		t.Errorf("with the default at Error, got:\n%s", out)
	}
}
