package main

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortener/analytics"
	"shortener/handler"
	"shortener/store"
)

// startAnalytics starts deriving clicks' dimensions (docs/analytics.md),
// with the visitor keys kept in st. The default country database (make
// geo) is optional: without it the app runs and every country is
// unknown, said in the log; a database given by path must open.
func startAnalytics(cfg analytics.Config, st *store.Store, log *slog.Logger, reg prometheus.Registerer) (*analytics.Enricher, error) {
	if cfg.Enabled && cfg.GeoDB == "" {
		if _, err := os.Stat(analytics.GeoDBPath); errors.Is(err, fs.ErrNotExist) {
			log.Warn("no country database: click countries are unknown (make geo installs the default; $SHORTENER_GEO_DB names another)", "path", analytics.GeoDBPath)
			cfg.GeoDB = "none"
		}
	}
	e, err := analytics.New(cfg, st, time.Now)
	if err != nil {
		return nil, err
	}
	if reg != nil {
		reg.MustRegister(e)
	}
	return e, nil
}

// analyzer is e for the handler, or nil with analytics off (on says), so
// that a redirect then does no work for them at all.
func analyzer(e *analytics.Enricher, on bool) handler.Analyzer {
	if e == nil || !on {
		return nil
	}
	return e
}
