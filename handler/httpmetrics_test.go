package handler

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortener"
)

// metricsHandler is a test handler (pages on, /metrics served) with its
// HTTP metrics in a registry of their own, and one link, "3kTMd8xQe1b".
func metricsHandler(t *testing.T) (*Handler, *prometheus.Registry) {
	t.Helper()
	f := newFakeLinks()
	f.links["3kTMd8xQe1b"] = shortener.Link{Code: "3kTMd8xQe1b", URL: "https://example.com/", Redirect: 302}
	reg := prometheus.NewRegistry()
	h := mustNew(Config{BaseURL: "http://sho.rt", Instance: "app9", AnonymousCreate: true, Pages: true,
		Policy: NewURLPolicy("http://sho.rt", nil, nil, false)}, Deps{
		Resolver: f, Links: f, IDs: &seqIDs{}, Ready: f, Metrics: http.NotFoundHandler(),
		Registry: reg, Log: discardLogger(), Now: func() time.Time { return now },
	})
	return h, reg
}

// gather reads the HTTP metrics: requests by "op code", and the number
// of durations observed by op.
func gather(t *testing.T, reg *prometheus.Registry) (requests map[string]float64, durations map[string]uint64) {
	t.Helper()
	requests, durations = map[string]float64{}, map[string]uint64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			switch mf.GetName() {
			case "shortener_http_requests_total":
				if v := m.GetCounter().GetValue(); v > 0 {
					requests[l["op"]+" "+l["code"]] = v
				}
			case "shortener_http_request_duration_seconds":
				if n := m.GetHistogram().GetSampleCount(); n > 0 {
					durations[l["op"]] = n
				}
			}
		}
	}
	return requests, durations
}

// TestHTTPMetricsOps sends one request of each kind through the handler
// and checks the op and status code it is counted under: the op comes
// from the route the request took (the route table), a preview is a page
// though it takes the redirect's route, and a request no route took is
// an API request or a page by its path.
func TestHTTPMetricsOps(t *testing.T) {
	tests := []struct{ method, path, body, want string }{
		{"GET", "/3kTMd8xQe1b", "", "redirect 302"},
		{"HEAD", "/3kTMd8xQe1b", "", "redirect 302"},
		{"GET", "/launch-2027", "", "redirect 404"},
		{"GET", "/3kTMd8xQe1b+", "", "page 200"},
		{"GET", "/", "", "page 200"},
		{"GET", "/stats/3kTMd8xQe1b", "", "page 200"},
		{"GET", "/openapi.json", "", "page 200"},
		{"POST", "/api/v1/links", `{"url":"https://example.com/a"}`, "create 201"},
		{"GET", "/api/v1/links/3kTMd8xQe1b", "", "api 401"},
		{"GET", "/api/v1/nope", "", "api 404"},
		{"GET", "/healthz", "", "probe 200"},
		{"GET", "/readyz", "", "probe 200"},
		{"GET", "/metrics", "", "metrics 404"},
		{"POST", "/abc", "", "redirect 404"}, // a password form's post
		{"PUT", "/abc", "", "page 405"},
		{"GET", "/a/b/c", "", "page 404"},
	}
	for _, tt := range tests {
		h, reg := metricsHandler(t)
		req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
		if tt.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		h.ServeHTTP(httptest.NewRecorder(), req)
		got, _ := gather(t, reg)
		want := map[string]float64{tt.want: 1}
		if !maps.Equal(got, want) {
			t.Errorf("%s %s: counted %v, want %v", tt.method, tt.path, got, want)
		}
	}
}

// TestHTTPMetricsCounts checks the series under load from many
// goroutines: each request counted once under its op and status code,
// and timed under its op.
func TestHTTPMetricsCounts(t *testing.T) {
	h, reg := metricsHandler(t)
	reqs := []struct {
		method, target string
		n              int
	}{
		{"GET", "/3kTMd8xQe1b", 50},
		{"GET", "/nope", 20},
		{"GET", "/healthz", 5},
		{"GET", "/3kTMd8xQe1b+", 3},
	}
	var wg sync.WaitGroup
	for _, rq := range reqs {
		for range rq.n {
			wg.Go(func() { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(rq.method, rq.target, nil)) })
		}
	}
	wg.Wait()
	got, durations := gather(t, reg)
	want := map[string]float64{"redirect 302": 50, "redirect 404": 20, "probe 200": 5, "page 200": 3}
	if !maps.Equal(got, want) {
		t.Errorf("shortener_http_requests_total: got %v, want %v", got, want)
	}
	wantDur := map[string]uint64{"redirect": 70, "probe": 5, "page": 3}
	if !maps.Equal(durations, wantDur) {
		t.Errorf("shortener_http_request_duration_seconds counts: got %v, want %v", durations, wantDur)
	}
}

// TestHTTPMetricsCodesOutsideArrays checks the codes kept outside the
// counters' arrays (never written by net/http, but a handler may).
func TestHTTPMetricsCodesOutsideArrays(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newHTTPMetrics(reg)
	for _, code := range []int{599, 700, 700} {
		m.serve(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }),
			httptest.NewRecorder(), httptest.NewRequest("GET", "/x", nil))
	}
	got, _ := gather(t, reg)
	want := map[string]float64{"page 599": 1, "page 700": 2}
	if !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
