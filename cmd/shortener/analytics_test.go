package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"shortener/analytics"
	"shortener/internal/poll"
	"shortener/internal/stack/stacktest"
)

// TestAnalyticsAcrossInstances clicks one link through two instances as
// people from known addresses (named by a trusted proxy's X-Real-IP) with
// known browsers, and reads the stats once the clicks are shipped: the
// countries come from the shipped DB-IP database, browsers, OSes and
// devices from the agents, every dimension sums to the total, and a
// visitor who clicked through both instances counts once (both hash
// with the day's shared key from MySQL).
func TestAnalyticsAcrossInstances(t *testing.T) {
	geo, err := filepath.Abs(filepath.Join("..", "..", analytics.GeoDBPath))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(geo); errors.Is(err, fs.ErrNotExist) {
		stacktest.Unavailable(t, "no country database: run make geo")
	}
	s := newServers(t)
	env := []string{"SHORTENER_GEO_DB", geo, "SHORTENER_TRUSTED_PROXIES", "127.0.0.1"}
	a1 := startApp(t, s, 1, env...)
	a2 := startApp(t, s, 2, env...)
	code := createKeyed(t, a1, map[string]any{"url": "https://example.com/analytics"})

	const (
		chrome  = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
		iphone  = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1"
		ipad    = "Mozilla/5.0 (iPad; CPU OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1"
		firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
		curl    = "curl/8.5.0"
	)
	clicks := []struct {
		a      *app
		addr   string
		agent  string
		visits int
	}{
		{a1, "8.8.8.8", chrome, 3},           // US, one visitor, three clicks
		{a2, "8.8.8.8", chrome, 2},           // the same visitor through the other instance
		{a1, "193.0.14.129", iphone, 2},      // NL
		{a2, "202.12.27.33", ipad, 1},        // JP
		{a1, "2001:200::1", firefox, 1},      // JP, IPv6
		{a2, "10.1.2.3", firefox, 1},         // private: unknown
		{a1, "212.58.244.20", curl, 1},       // GB, a bot
		{a2, "::ffff:130.75.1.1", iphone, 1}, // DE, IPv4-mapped
	}
	total := 0
	for _, c := range clicks {
		for range c.visits {
			req, _ := http.NewRequest(http.MethodGet, c.a.base+"/"+code, nil)
			req.Header.Set("X-Real-IP", c.addr)
			req.Header.Set("User-Agent", c.agent)
			resp, err := noFollow.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusFound {
				t.Fatalf("GET /%s as %s: %d", code, c.addr, resp.StatusCode)
			}
			total++
		}
	}

	var st struct {
		Total          int64
		UniqueVisitors int64 `json:"unique_visitors"`
		Countries      map[string]int64
		Browsers       map[string]int64
		OS             map[string]int64
		Devices        map[string]int64
	}
	poll.Until(t, "every click shipped", func() error { // the journals ship every second
		status, body := keyed(t, a2, http.MethodGet, "/api/v1/links/"+code+"/stats", nil)
		if status != http.StatusOK {
			return fmt.Errorf("stats: %d %s", status, body)
		}
		if err := json.Unmarshal(body, &st); err != nil {
			return err
		}
		if st.Total != int64(total) {
			return fmt.Errorf("%d clicks counted of %d", st.Total, total)
		}
		return nil
	})
	for name, c := range map[string]struct{ got, want map[string]int64 }{
		"countries": {st.Countries, map[string]int64{"US": 5, "NL": 2, "JP": 2, "ZZ": 1, "GB": 1, "DE": 1}},
		"browsers":  {st.Browsers, map[string]int64{"chrome": 5, "safari": 4, "firefox": 2, "other": 1}},
		"os":        {st.OS, map[string]int64{"windows": 5, "ios": 4, "linux": 2, "other": 1}},
		"devices":   {st.Devices, map[string]int64{"desktop": 7, "mobile": 3, "tablet": 1, "bot": 1}},
	} {
		if !maps.Equal(c.got, c.want) {
			t.Errorf("%s: %v, want %v", name, c.got, c.want)
		}
	}
	// Seven people: 8.8.8.8 with Chrome through both instances is one.
	// HyperLogLog is exact at this size (its sparse form).
	if st.UniqueVisitors != 7 {
		t.Errorf("unique visitors %d, want 7", st.UniqueVisitors)
	}
}
