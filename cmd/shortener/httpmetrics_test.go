package main

import (
	"net/http/httptest"
	"testing"
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
		if got := opOf(httptest.NewRequest(tt.method, tt.path, nil)); got != tt.want {
			t.Errorf("%s %s: got %q, want %q", tt.method, tt.path, got, tt.want)
		}
	}
}
