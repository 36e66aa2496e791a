package webhook

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestTargets is which addresses a webhook may be sent to: public ones
// only, unless private ones are allowed.
func TestTargets(t *testing.T) {
	tests := []struct {
		addr string
		ok   bool
	}{
		{"93.184.215.14", true},
		{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", true},
		{"8.8.8.8", true},
		{"127.0.0.1", false},
		{"127.8.9.10", false},
		{"::1", false},
		{"::ffff:127.0.0.1", false}, // IPv4-mapped loopback
		{"0.0.0.0", false},
		{"::", false},
		{"0.1.2.3", false},
		{"10.0.0.1", false},
		{"172.16.5.4", false},
		{"192.168.1.1", false},
		{"::ffff:192.168.1.1", false},
		{"fd12:3456::1", false},
		{"169.254.169.254", false}, // cloud metadata
		{"fe80::1", false},
		{"100.64.0.1", false},
		{"198.18.0.1", false},
		{"224.0.0.1", false},
		{"ff02::1", false},
		{"255.255.255.255", false},
		{"192.0.0.8", false},
	}
	for _, tt := range tests {
		a := netip.MustParseAddr(tt.addr)
		if got := (Targets{}).Allows(a); got != tt.ok {
			t.Errorf("%s: allowed %v, want %v", tt.addr, got, tt.ok)
		}
		if !(Targets{AllowPrivate: true}).Allows(a) {
			t.Errorf("%s: refused with private addresses allowed", tt.addr)
		}
	}
	if (Targets{}).Allows(netip.Addr{}) {
		t.Error("the zero address is allowed")
	}
}

// TestDialRefusesPrivate connects to a receiver on 127.0.0.1, by address
// and by a name that resolves to it: refused before any byte is sent
// unless private addresses are allowed. The check is the connection's,
// so it holds whatever a name resolved to when the webhook was made.
func TestDialRefusesPrivate(t *testing.T) {
	var got atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got.Add(1) }))
	defer srv.Close()
	byName := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	for _, u := range []string{srv.URL, byName} {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, u, nil)
		_, err := Targets{}.client(5*time.Second, 1).Do(req)
		if !errors.Is(err, errBlocked) || failure(err) != reasonRefused {
			t.Errorf("%s: got %v, want refused", u, err)
		}
	}
	if n := got.Load(); n != 0 {
		t.Errorf("the receiver got %d requests, want none", n)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
	resp, err := Targets{AllowPrivate: true}.client(5*time.Second, 1).Do(req)
	if err != nil {
		t.Fatalf("with private addresses allowed: %v", err)
	}
	resp.Body.Close()
	if n := got.Load(); n != 1 {
		t.Errorf("with private addresses allowed the receiver got %d requests, want 1", n)
	}
}

// TestNoRedirectFollowed: a 3xx is the answer, not a way elsewhere.
func TestNoRedirectFollowed(t *testing.T) {
	var followed atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			followed.Store(true)
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
	resp, err := Targets{AllowPrivate: true}.client(5*time.Second, 1).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || followed.Load() {
		t.Errorf("got %d, followed %v: want the 307 itself", resp.StatusCode, followed.Load())
	}
}
