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

// defaultGeoDBs are where the default country database is looked for
// when no path is set: where make geo installs it (relative to the
// repository's root, the working directory of make up), and where the
// container image puts it (deploy/Dockerfile).
var defaultGeoDBs = []string{analytics.GeoDBPath, "/usr/share/shortener/dbip-country.mmdb"}

// startAnalytics starts deriving clicks' dimensions (docs/analytics.md),
// with the visitor keys kept in st. The default country database (make
// geo) is optional: without it the app runs and every country is
// unknown, said in the log; a database given by path must open.
func startAnalytics(cfg analytics.Config, st *store.Store, log *slog.Logger, reg prometheus.Registerer) (*analytics.Enricher, error) {
	if cfg.Enabled && cfg.GeoDB == "" {
		cfg.GeoDB = "none"
		for _, p := range defaultGeoDBs {
			if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
				cfg.GeoDB = p
				break
			}
		}
		if cfg.GeoDB == "none" {
			log.Warn("no country database: click countries are unknown (make geo installs the default; $SHORTENER_GEO_DB names another)", "looked at", defaultGeoDBs)
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
