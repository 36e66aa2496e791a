package main

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// httpMetrics counts and times every request the server answers, by what
// it was (op) and its status code, for dashboards and alerts: the redirect
// rate and latency by outcome is the shortener's first number.
//
// It runs on every redirect, so a request costs two atomic adds and a
// histogram observation: the series' children are looked up by label once
// (a label lookup hashes the values under a lock) and kept in arrays
// indexed by op and status code, and the status writer is pooled.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// observe[op] is op's duration histogram; count[op][code-minCode]
	// its counter for code, filled in on the code's first request (so
	// only codes that happened are exported).
	observe [numOps]prometheus.Observer
	count   [numOps][maxCode - minCode]atomic.Pointer[counter]
	writers sync.Pool
}

// counter holds a series' child (an interface) behind a pointer that can
// be stored atomically.
type counter struct{ prometheus.Counter }

// The status codes kept in arrays; others (never written by net/http)
// are looked up by label.
const (
	minCode = 100
	maxCode = 600
)

// The ops, in the order of opNames.
const (
	opRedirect = iota
	opCreate
	opAPI
	opProbe
	opMetrics
	opPage
	numOps
)

var opNames = [numOps]string{"redirect", "create", "api", "probe", "metrics", "page"}

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
	m.writers.New = func() any { return new(statusWriter) }
	reg.MustRegister(m.requests, m.duration)
	for op, name := range opNames {
		m.observe[op] = m.duration.WithLabelValues(name)
	}
	// The redirect series exist from the start, so that a rate over them
	// is 0 rather than absent on an idle instance.
	for _, code := range []int{302, 404, 410, 503} {
		m.counter(opRedirect, code)
	}
	return m
}

// counter returns op's counter for a status code.
func (m *httpMetrics) counter(op, code int) prometheus.Counter {
	if code < minCode || code >= maxCode {
		return m.requests.WithLabelValues(opNames[op], strconv.Itoa(code))
	}
	slot := &m.count[op][code-minCode]
	if c := slot.Load(); c != nil {
		return c.Counter
	}
	// Two requests may both get here: WithLabelValues gives both the
	// same child, so either store is right.
	c := &counter{m.requests.WithLabelValues(opNames[op], strconv.Itoa(code))}
	slot.Store(c)
	return c.Counter
}

// wrap instruments h.
func (m *httpMetrics) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := m.writers.Get().(*statusWriter)
		*sw = statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r)
		op, code := opOf(r), sw.code
		// The handler is done with the writer: net/http's own writer is
		// not used after ServeHTTP returns either.
		*sw = statusWriter{}
		m.writers.Put(sw)
		m.counter(op, code).Inc()
		m.observe[op].Observe(time.Since(start).Seconds())
	})
}

// opOf names what a request is, from its method and path alone (a label
// must have few values: never the code itself).
func opOf(r *http.Request) int {
	p := r.URL.Path
	switch {
	case p == "/api/v1/links" && r.Method == http.MethodPost:
		return opCreate
	case strings.HasPrefix(p, "/api/"):
		return opAPI
	case p == "/healthz" || p == "/readyz":
		return opProbe
	case p == "/metrics":
		return opMetrics
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && len(p) > 1 &&
		!strings.ContainsAny(p[1:], "/.+") && !reservedRoot(p[1:]):
		return opRedirect
	}
	return opPage
}

// reservedRoot tells the one-segment paths that are pages, not codes.
func reservedRoot(p string) bool {
	switch p {
	case "openapi.json", "favicon.ico", "robots.txt", "trending":
		return true
	}
	return false
}

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
