package main

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// httpMetrics counts and times every request the server answers, by what
// it was (op) and its status code, for dashboards and alerts: the redirect
// rate and latency by outcome is the shortener's first number.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shortener_http_requests_total",
			Help: "HTTP requests answered, by op (redirect, create, api, page, probe, metrics) and status code.",
		}, []string{"op", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "shortener_http_request_duration_seconds",
			Help:    "Time from a request's arrival to its answer, by op.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"op"}),
	}
	reg.MustRegister(m.requests, m.duration)
	// The redirect series exist from the start, so that a rate over them
	// is 0 rather than absent on an idle instance.
	for _, code := range []string{"302", "404", "410", "503"} {
		m.requests.WithLabelValues("redirect", code)
	}
	m.duration.WithLabelValues("redirect")
	return m
}

// wrap instruments h.
func (m *httpMetrics) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r)
		op := opOf(r)
		m.requests.WithLabelValues(op, strconv.Itoa(sw.code)).Inc()
		m.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	})
}

// opOf names what a request is, from its method and path alone (a label
// must have few values: never the code itself).
func opOf(r *http.Request) string {
	p := r.URL.Path
	switch {
	case p == "/api/v1/links" && r.Method == http.MethodPost:
		return "create"
	case strings.HasPrefix(p, "/api/"):
		return "api"
	case p == "/healthz" || p == "/readyz":
		return "probe"
	case p == "/metrics":
		return "metrics"
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && len(p) > 1 &&
		!strings.ContainsAny(p[1:], "/.+") && !reservedRoot[p[1:]]:
		return "redirect"
	}
	return "page"
}

// reservedRoot are one-segment paths that are pages, not codes.
var reservedRoot = map[string]bool{"openapi.json": true, "favicon.ico": true, "robots.txt": true, "trending": true}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
