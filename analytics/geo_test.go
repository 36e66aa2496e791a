package analytics_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"shortener/analytics"
	"shortener/internal/poll"
	"shortener/internal/stack/stacktest"
)

// These tests read the shipped country database, so they live outside
// the package: internal/stack (which stacktest, and its Unavailable,
// belong to) imports analytics for the database's path.

// geoDB is the shipped country database's path from this package's
// directory; a test that needs it skips without it (fails under
// SHORTENER_INTEGRATION=1, as make test runs it: make test installs it).
func geoDB(tb testing.TB) string {
	tb.Helper()
	path := analytics.DefaultGeoDB("..")
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		stacktest.Unavailable(tb, "the country database "+path+" is missing: run make geo")
	}
	return path
}

// keys is a KeySource of one fixed key per day.
type keys struct{}

func (keys) VisitorKey(_ context.Context, day time.Time) ([]byte, error) {
	k := sha256.Sum256([]byte(day.Format(time.DateOnly)))
	return k[:], nil
}

// enricher returns an Enricher on the shipped database, holding the
// shared key of at's day, closed when the test ends.
func enricher(tb testing.TB, at time.Time) *analytics.Enricher {
	tb.Helper()
	e, err := analytics.New(analytics.Config{Enabled: true, GeoDB: geoDB(tb), AgentCacheSize: 1000}, keys{}, func() time.Time { return at })
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := e.Close(); err != nil {
			tb.Error(err)
		}
	})
	poll.Until(tb, "the day's shared visitor key", func() error {
		if !e.HoldsSharedKey(at) || !e.HoldsSharedKey(at.Add(24*time.Hour)) {
			return fmt.Errorf("not held yet")
		}
		return nil
	})
	return e
}

// TestCountries looks well-known, long-stable allocations up in the
// shipped database (DB-IP Lite): public DNS resolvers, root servers and
// registries, IPv4 and IPv6. Anycast services are placed where DB-IP
// says, which is not always where a reader expects: it puts 1.1.1.1 in
// AU (APNIC's registration) and Google's and Cloudflare's IPv6 resolvers
// in CA, so those are not used.
func TestCountries(t *testing.T) {
	now := time.Now()
	e := enricher(t, now)
	for _, tc := range []struct {
		addr string
		want string
	}{
		{"8.8.8.8", "US"},                   // Google Public DNS
		{"9.9.9.9", "US"},                   // Quad9
		{"208.67.222.222", "US"},            // OpenDNS
		{"::ffff:8.8.8.8", "US"},            // an IPv4 client of a dual-stack socket
		{"193.0.14.129", "NL"},              // k.root-servers.net, RIPE NCC
		{"2001:67c:2e8:22::c100:68b", "NL"}, // RIPE NCC's web site
		{"202.12.27.33", "JP"},              // m.root-servers.net, WIDE
		{"2001:200::1", "JP"},               // WIDE's IPv6 block
		{"212.58.244.20", "GB"},             // the BBC
		{"130.75.1.1", "DE"},                // Leibniz Universität Hannover
		{"80.67.169.12", "FR"},              // FDN's resolver
		{"200.160.2.3", "BR"},               // NIC.br
		{"127.0.0.1", "ZZ"},                 // loopback
		{"::1", "ZZ"},                       // loopback
		{"10.1.2.3", "ZZ"},                  // private
		{"192.168.1.1", "ZZ"},               // private
		{"fe80::1%eth0", "ZZ"},              // link-local
		{"192.0.2.1", "ZZ"},                 // documentation
		{"2001:db8::1", "ZZ"},               // documentation
	} {
		for range 2 { // decoded, then from the offset cache
			got := e.Enrich(netip.MustParseAddr(tc.addr), "", true, now).Country
			if got.String() != tc.want {
				t.Errorf("%s: got %s, want %s", tc.addr, got, tc.want)
			}
		}
	}
	if got := e.Enrich(netip.Addr{}, "", true, now); got.Country != (analytics.Country{}) || got.Visitor != 0 {
		t.Errorf("no address: got country %s visitor %#x, want ZZ and 0", got.Country, got.Visitor)
	}
}

// TestGeoDBMissing: the default database missing (this package's
// directory is not the repository root, so GeoDBPath is not found from
// it) is an error that names make geo; a given path that is missing is
// an error too; "none" needs no file.
func TestGeoDBMissing(t *testing.T) {
	_, err := analytics.New(analytics.Config{Enabled: true, AgentCacheSize: 10}, keys{}, time.Now)
	if err == nil || !strings.Contains(err.Error(), "make geo") {
		t.Errorf("default database missing: got %v, want an error naming make geo", err)
	}
	if _, err := analytics.New(analytics.Config{Enabled: true, GeoDB: "testdata/nothing.mmdb", AgentCacheSize: 10}, keys{}, time.Now); err == nil {
		t.Error("a missing database: got no error")
	}
	e, err := analytics.New(analytics.Config{Enabled: true, GeoDB: "none", AgentCacheSize: 10}, keys{}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got := e.Enrich(netip.MustParseAddr("8.8.8.8"), "", true, time.Now()).Country; got != (analytics.Country{}) {
		t.Errorf(`GeoDB "none": got %s, want ZZ`, got)
	}
}
