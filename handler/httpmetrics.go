package handler

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
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

// op is what a request is, for the metrics' op label (a label must have
// few values: never the code itself). Each route names its own (routes).
type op uint8

// The ops, in the order of opNames.
const (
	opRedirect op = iota
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
	for o, name := range opNames {
		m.observe[o] = m.duration.WithLabelValues(name)
	}
	// The redirect series exist from the start, so that a rate over them
	// is 0 rather than absent on an idle instance.
	for _, code := range []int{302, 404, 410, 503} {
		m.counter(opRedirect, code)
	}
	return m
}

// counter returns o's counter for a status code.
func (m *httpMetrics) counter(o op, code int) prometheus.Counter {
	if code < minCode || code >= maxCode {
		return m.requests.WithLabelValues(opNames[o], strconv.Itoa(code))
	}
	slot := &m.count[o][code-minCode]
	if c := slot.Load(); c != nil {
		return c.Counter
	}
	// Two requests may both get here: WithLabelValues gives both the
	// same child, so either store is right.
	c := &counter{m.requests.WithLabelValues(opNames[o], strconv.Itoa(code))}
	slot.Store(c)
	return c.Counter
}

// serve serves r with next, counted and timed under the op its route
// names (withOp).
func (m *httpMetrics) serve(next http.Handler, w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := m.writers.Get().(*statusWriter)
	*sw = statusWriter{ResponseWriter: w, code: http.StatusOK, op: defaultOp(r)}
	next.ServeHTTP(sw, r)
	o, code := sw.op, sw.code
	// The handler is done with the writer: net/http's own writer is not
	// used after ServeHTTP returns either.
	*sw = statusWriter{}
	m.writers.Put(sw)
	m.counter(o, code).Inc()
	m.observe[o].Observe(time.Since(start).Seconds())
}

// defaultOp names a request no route took (Echo's 404 and 405): an
// API request or a page.
func defaultOp(r *http.Request) op {
	if strings.HasPrefix(r.URL.Path, "/api/") {
		return opAPI
	}
	return opPage
}

// withOp tells the HTTP metrics that next's requests are op.
func withOp(o op, next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if w, ok := c.Response().Writer.(*statusWriter); ok {
			w.op = o
		}
		return next(c)
	}
}

// setOp renames the op of c's request, for a handler that serves two
// kinds of request under one route (redirect and the preview).
func setOp(c echo.Context, o op) {
	if w, ok := c.Response().Writer.(*statusWriter); ok {
		w.op = o
	}
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	code  int
	op    op
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
