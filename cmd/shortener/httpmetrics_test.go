package main

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestOpOf(t *testing.T) {
	tests := []struct{ method, path, want string }{
		{"GET", "/3kTMd8xQe1b", "redirect"},
		{"HEAD", "/launch-2027", "redirect"},
		{"GET", "/3kTMd8xQe1b+", "page"},
		{"GET", "/", "page"},
		{"GET", "/openapi.json", "page"},
		{"POST", "/api/v1/links", "create"},
		{"GET", "/api/v1/links/abc", "api"},
		{"GET", "/api/v1/trending", "api"},
		{"GET", "/healthz", "probe"},
		{"GET", "/readyz", "probe"},
		{"GET", "/metrics", "metrics"},
		{"POST", "/abc", "page"},
	}
	for _, tt := range tests {
		if got := opNames[opOf(httptest.NewRequest(tt.method, tt.path, nil))]; got != tt.want {
			t.Errorf("%s %s: got %q, want %q", tt.method, tt.path, got, tt.want)
		}
	}
}

// TestHTTPMetricsCounts checks the wrapper's series: each request counted
// once under its op and status code (codes inside and outside the arrays
// the counters are kept in), and timed under its op, from many goroutines.
func TestHTTPMetricsCounts(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newHTTPMetrics(reg).wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.URL.Query().Get("code"))
		if code == 0 {
			w.Write([]byte("ok")) // an implicit 200
			return
		}
		w.WriteHeader(code)
		w.WriteHeader(http.StatusTeapot) // ignored: the first code counts
	}))
	reqs := []struct {
		method, target string
		n              int
	}{
		{"GET", "/AbC123xyz?code=302", 50},
		{"GET", "/nope?code=404", 20},
		{"POST", "/api/v1/links?code=201", 10},
		{"GET", "/healthz", 5},
		{"GET", "/stats/x?code=599", 3},
		{"GET", "/stats/x?code=700", 2},
	}
	var wg sync.WaitGroup
	for _, rq := range reqs {
		for range rq.n {
			wg.Go(func() { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(rq.method, rq.target, nil)) })
		}
	}
	wg.Wait()
	want := map[string]float64{
		"redirect 302": 50, "redirect 404": 20, "redirect 410": 0, "redirect 503": 0,
		"create 201": 10, "probe 200": 5, "page 599": 3, "page 700": 2,
	}
	got := map[string]float64{}
	durations := map[string]uint64{}
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
				got[l["op"]+" "+l["code"]] = m.GetCounter().GetValue()
			case "shortener_http_request_duration_seconds":
				durations[l["op"]] = m.GetHistogram().GetSampleCount()
			}
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("shortener_http_requests_total: got %v, want %v", got, want)
	}
	wantDur := map[string]uint64{"redirect": 70, "create": 10, "probe": 5, "page": 5, "api": 0, "metrics": 0}
	if !maps.Equal(durations, wantDur) {
		t.Errorf("shortener_http_request_duration_seconds counts: got %v, want %v", durations, wantDur)
	}
}
