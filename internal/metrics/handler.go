package metrics

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves the Prometheus text exposition of g at /metrics. A
// collector that fails is logged and its metrics left out (the rest of the
// scrape still answers); logger nil is silent.
func Handler(g prometheus.Gatherer, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:      slogPrinter{logger},
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// slogPrinter adapts a slog.Logger to promhttp's Logger interface.
type slogPrinter struct{ l *slog.Logger }

func (p slogPrinter) Println(v ...any) { p.l.Error("metrics: gather", "error", fmt.Sprint(v...)) }
