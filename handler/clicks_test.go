package handler

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"shortener"
	"shortener/analytics"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestReferrerHost(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"https://news.example.com/story?id=1", "news.example.com"},
		{"https://News.Example.COM:8443/x", "news.example.com"},
		{"http://user:pw@evil.example/", "evil.example"},
		{"https://example.com", "example.com"},
		{"https://example.com.#frag", "example.com"},
		{"http://[2001:db8::1]:8080/p", "[2001:db8::1]"},
		{"android-app://com.google.android.gm/", "com.google.android.gm"},
		{"not a url", ""},
		{"https:///path", ""},
		{"https://exa mple.com/", "invalid"},
		{"https://exämple.com/", "invalid"},
	} {
		if got := referrerHost(tc.in); got != tc.want {
			t.Errorf("referrerHost(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestAgentClass(t *testing.T) {
	cache := newAgentCache()
	for _, tc := range []struct {
		ua   string
		want shortener.Agent
	}{
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", shortener.AgentBrowser},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1", shortener.AgentBrowser},
		{"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", shortener.AgentBrowser},
		{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", shortener.AgentBot},
		{"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", shortener.AgentBot},
		{"Twitterbot/1.0", shortener.AgentBot},
		{"Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)", shortener.AgentBot},
		{"facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)", shortener.AgentBot},
		{"WhatsApp/2.23.20.0", shortener.AgentBot},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36", shortener.AgentBot},
		{"curl/8.5.0", shortener.AgentBot},
		{"Wget/1.21.4", shortener.AgentBot},
		{"python-requests/2.31.0", shortener.AgentBot},
		{"Go-http-client/1.1", shortener.AgentBot},
		{"Mozilla/5.0 (compatible; YandexBot/3.0)", shortener.AgentBot},
		{"Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)", shortener.AgentBot},
		{"", shortener.AgentBot},
	} {
		if got := agentClass(tc.ua); got != tc.want {
			t.Errorf("agentClass(%q) = %v, want %v", tc.ua, got, tc.want)
		}
		for range 2 { // a miss, then a hit
			if got := cache.class(tc.ua); got != tc.want {
				t.Errorf("cached class(%q) = %v, want %v", tc.ua, got, tc.want)
			}
		}
	}
}

// clickLog is a Recorder that keeps what it is given.
type clickLog struct {
	mu     sync.Mutex
	clicks []shortener.Click
}

func (c *clickLog) Record(cl shortener.Click) {
	c.mu.Lock()
	c.clicks = append(c.clicks, cl)
	c.mu.Unlock()
}

// TestRedirectRecordsClicks: a GET answered with a redirect is one click,
// with the referrer's host and the agent class, and the request nginx
// names (from nginx only); HEAD, 404 and 410 are not.
func TestRedirectRecordsClicks(t *testing.T) {
	f := newFakeLinks()
	f.links["abc"] = shortener.Link{ID: 7, Code: "abc", URL: "https://example.com/", Redirect: 302}
	f.links["old"] = shortener.Link{ID: 8, Code: "old", URL: "https://example.com/", Redirect: 302, DeletedAt: now.Add(-time.Hour)}
	log := &clickLog{}
	h := newTestHandler(f)
	h.d.Clicks = log
	if rec := do(h, "GET", "/abc", "", "Referer", "https://t.co/xyz?q=secret", "User-Agent", "Mozilla/5.0 Firefox/133.0"); rec.Code != 302 {
		t.Fatalf("GET: %d", rec.Code)
	}
	// X-Click-Id is nginx's: from a peer that is not a trusted proxy (a
	// client reaching the app directly) it is ignored, from nginx believed.
	const clickID = "1733250000.123-000102030405060708090a0b0c0d0e0f"
	do(h, "GET", "/abc", "", "User-Agent", "curl/8.5.0", "X-Click-Id", clickID)
	h.proxies = proxies{netip.MustParsePrefix("192.0.2.1/32")} // httptest's peer
	do(h, "GET", "/abc", "", "User-Agent", "curl/8.5.0", "X-Click-Id", clickID)
	do(h, "HEAD", "/abc", "")
	do(h, "GET", "/nope", "")
	do(h, "GET", "/old", "")
	want := []shortener.Click{
		{LinkID: 7, Code: "abc", At: now, Referrer: "t.co", Agent: shortener.AgentBrowser},
		{LinkID: 7, Code: "abc", At: now, Referrer: "", Agent: shortener.AgentBot},
		{LinkID: 7, Code: "abc", At: now, Referrer: "", Agent: shortener.AgentBot,
			Request: shortener.ClickRequest{ID: [16]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, At: 1733250000123}},
	}
	if len(log.clicks) != len(want) {
		t.Fatalf("recorded %d clicks, want %d: %+v", len(log.clicks), len(want), log.clicks)
	}
	// Client stands for address and agent: the same for the same pair,
	// another for another agent, never 0; its value is the process's own.
	c := log.clicks
	if c[0].Client == 0 || c[1].Client == 0 || c[1].Client != c[2].Client || c[0].Client == c[1].Client {
		t.Errorf("clients %d, %d, %d: want non-zero, the last two equal (same address and agent), the first another", c[0].Client, c[1].Client, c[2].Client)
	}
	for i, w := range want {
		g := c[i]
		g.Client = 0
		if g != w {
			t.Errorf("click %d: got %+v, want %+v", i, g, w)
		}
	}
}

// fakeStats answers ClickStats and remembers the question.
type fakeStats struct {
	link     int64
	from, to time.Time
	daily    bool
}

func (f *fakeStats) ClickStats(_ context.Context, link int64, from, to time.Time, daily bool, top int) (shortener.ClickStats, error) {
	f.link, f.from, f.to, f.daily = link, from, to, daily
	return shortener.ClickStats{
		Total: 5, Browsers: 4, Bots: 1, AsOf: now.Add(-time.Second),
		Series:    []shortener.ClickCount{{Start: from, Clicks: 5, Visitors: 4}},
		Referrers: []shortener.ReferrerCount{{Host: "t.co", Clicks: 3}, {Host: "", Clicks: 2}},
		Visitors:  4,
		Dims: map[string]map[string]int64{
			shortener.DimCountry: {"US": 3, "DE": 1, "ZZ": 1}, shortener.DimBrowser: {"chrome": 4, "unknown": 1},
			shortener.DimOS: {"windows": 2, "ios": 2, "unknown": 1}, shortener.DimDevice: {"desktop": 2, "mobile": 2, "bot": 1},
		},
		DayDims: []shortener.DimCount{{Day: from.Truncate(24 * time.Hour), Dim: shortener.DimCountry, Value: "US", Clicks: 3}},
	}, nil
}

// TestStatsAnalytics: the stats carry unique visitors and each
// dimension's counts, and ?format=csv gives the series and the
// dimensions by day as CSV; another format is refused.
func TestStatsAnalytics(t *testing.T) {
	f := newFakeLinks()
	f.links["abc"] = shortener.Link{ID: 7, Code: "abc", URL: "https://a.example/", Redirect: 302, Owner: HashKey("k3y")}
	h := newTestHandler(f)
	h.d.Stats = &fakeStats{}
	key := []string{"X-Api-Key", "k3y"}
	rec := do(h, "GET", "/api/v1/links/abc/stats?interval=day&from=2026-12-03&to=2026-12-04", "", key...)
	if rec.Code != http.StatusOK {
		t.Fatalf("got %d %s", rec.Code, rec.Body)
	}
	var body statsResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if body.UniqueVisitors != 4 || body.Countries["US"] != 3 || body.Browsers["chrome"] != 4 || body.OS["ios"] != 2 ||
		body.Devices["bot"] != 1 || len(body.Series) != 1 || body.Series[0].Visitors != 4 {
		t.Errorf("body %+v", body)
	}

	rec = do(h, "GET", "/api/v1/links/abc/stats?interval=day&from=2026-12-03&to=2026-12-04&format=csv", "", key...)
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/csv") {
		t.Fatalf("csv: got %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	want := "start,dimension,value,clicks,visitors\n" +
		"2026-12-03T00:00:00Z,total,,5,4\n" +
		"2026-12-03T00:00:00Z,country,US,3,\n"
	if got := rec.Body.String(); got != want {
		t.Errorf("csv:\n%s\nwant:\n%s", got, want)
	}
	if rec := do(h, "GET", "/api/v1/links/abc/stats?format=xml", "", key...); rec.Code != 400 || errCode(t, rec) != CodeInvalidRequest {
		t.Errorf("format=xml: got %d, want 400 invalid_request", rec.Code)
	}
}

// fakeAnalyzer derives fixed dimensions and remembers what it was asked.
type fakeAnalyzer struct {
	addr netip.Addr
	ua   string
	bot  bool
}

func (f *fakeAnalyzer) Enrich(addr netip.Addr, ua string, bot bool, _ time.Time) analytics.Dims {
	f.addr, f.ua, f.bot = addr, ua, bot
	return analytics.Dims{Country: analytics.Country{'D', 'E'}, Agent: analytics.Agent{Browser: analytics.BrowserFirefox, OS: analytics.OSLinux},
		Visitor: 99}
}

// TestClickDims: with an Analyzer, a click carries the dimensions it
// derives from the client's address (the proxy's X-Real-IP, IPv6 and
// IPv4-mapped included) and agent, with the bot verdict; without one,
// none.
func TestClickDims(t *testing.T) {
	f := newFakeLinks()
	f.links["abc"] = shortener.Link{ID: 7, Code: "abc", URL: "https://a.example/", Redirect: 302}
	h := newTestHandler(f)
	log := &clickLog{}
	h.d.Clicks = log
	an := &fakeAnalyzer{}
	h.d.Analytics = an
	ua := "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
	do(h, "GET", "/abc", "", "User-Agent", ua)
	if len(log.clicks) != 1 {
		t.Fatalf("recorded %d clicks", len(log.clicks))
	}
	c := log.clicks[0]
	want := shortener.ClickDims{Country: [2]byte{'D', 'E'}, Browser: uint8(analytics.BrowserFirefox), OS: uint8(analytics.OSLinux), Visitor: 99}
	if !c.Analyzed || c.Dims != want {
		t.Errorf("click %+v, want analyzed with %+v", c, want)
	}
	if an.ua != ua || an.bot || !an.addr.IsValid() {
		t.Errorf("asked addr %v ua %q bot %v", an.addr, an.ua, an.bot)
	}
	do(h, "GET", "/abc", "", "User-Agent", "curl/8.5.0")
	if !an.bot {
		t.Errorf("curl: the analyzer was not told it is a bot")
	}
	for _, tc := range []struct{ remote, want string }{
		{"[2001:db8::1]:4321", "2001:db8::1"},
		{"[::ffff:192.0.2.7]:4321", "192.0.2.7"},
		{"192.0.2.8:4321", "192.0.2.8"},
	} {
		req := httptest.NewRequest("GET", "/abc", nil)
		req.RemoteAddr = tc.remote
		h.ServeHTTP(httptest.NewRecorder(), req)
		if an.addr.String() != tc.want {
			t.Errorf("peer %s: analyzed address %v, want %s", tc.remote, an.addr, tc.want)
		}
	}

	h.d.Analytics = nil
	log.clicks = nil
	do(h, "GET", "/abc", "")
	if len(log.clicks) != 1 || log.clicks[0].Analyzed {
		t.Errorf("without an analyzer: %+v, want one click without dimensions", log.clicks)
	}
}

func TestStats(t *testing.T) {
	f := newFakeLinks()
	f.links["abc"] = shortener.Link{ID: 7, Code: "abc", URL: "https://a.example/", Redirect: 302, Owner: HashKey("k3y")}
	f.links["old"] = shortener.Link{ID: 8, Code: "old", URL: "https://a.example/", Redirect: 302, Owner: HashKey("k3y"), DeletedAt: now}
	st := &fakeStats{}
	h := newTestHandler(f)
	h.d.Stats = st
	key := []string{"X-Api-Key", "k3y"}

	if rec := do(h, "GET", "/api/v1/links/abc/stats", ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("without a key: got %d, want 401", rec.Code)
	}
	if rec := do(h, "GET", "/api/v1/links/abc/stats", "", "X-Api-Key", "other-k3y"); rec.Code != http.StatusForbidden {
		t.Errorf("another owner's key: got %d, want 403", rec.Code)
	}
	if rec := do(h, "GET", "/api/v1/links/abc/stats", "", "X-Api-Key", "adm1n"); rec.Code != http.StatusOK || st.link != 7 {
		t.Errorf("admin key: got %d (link %d), want 200 for link 7", rec.Code, st.link)
	}
	// A deleted link keeps its counts.
	if rec := do(h, "GET", "/api/v1/links/old/stats", "", key...); rec.Code != http.StatusOK || st.link != 8 {
		t.Errorf("deleted link: got %d (link %d), want 200 for link 8", rec.Code, st.link)
	}
	rec := do(h, "GET", "/api/v1/links/abc/stats?interval=hour&from=2026-12-03T01:30:00Z&to=2026-12-03T05:10:00Z", "", key...)
	if rec.Code != http.StatusOK {
		t.Fatalf("got %d %s, want 200", rec.Code, rec.Body)
	}
	if want := time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC); !st.from.Equal(want) || st.daily {
		t.Errorf("asked from %v daily %v, want %v hourly", st.from, st.daily, want)
	}
	if want := time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC); !st.to.Equal(want) {
		t.Errorf("asked to %v, want %v (rounded up)", st.to, want)
	}
	var body statsResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if body.Total != 5 || body.Agents.Bot != 1 || body.Agents.Browser != 4 || len(body.Referrers) != 2 || body.Interval != "hour" || !body.AsOf.Equal(now.Add(-time.Second)) {
		t.Errorf("body %+v", body)
	}

	// Defaults: by day, the 30 days up to now.
	if rec := do(h, "GET", "/api/v1/links/abc/stats", "", key...); rec.Code != 200 {
		t.Fatalf("defaults: %d", rec.Code)
	}
	if !st.daily || st.to.Sub(st.from) != 30*24*time.Hour || !st.to.After(now) {
		t.Errorf("defaults asked daily %v from %v to %v", st.daily, st.from, st.to)
	}

	for _, q := range []string{"?interval=week", "?from=yesterday", "?from=2026-12-03&to=2026-12-01", "?interval=hour&from=2026-01-01&to=2026-12-01"} {
		if rec := do(h, "GET", "/api/v1/links/abc/stats"+q, "", key...); rec.Code != 400 || errCode(t, rec) != CodeInvalidRequest {
			t.Errorf("%s: got %d, want 400 invalid_request", q, rec.Code)
		}
	}
	if rec := do(h, "GET", "/api/v1/links/nope/stats", "", key...); rec.Code != 404 {
		t.Errorf("unknown code: got %d, want 404", rec.Code)
	}
}

// TestClickRequest parses nginx's X-Click-Id ("$msec-$request_id") and
// ignores anything else, so a malformed header only loses deduplication.
func TestClickRequest(t *testing.T) {
	id := [16]byte{0x5f, 0x0c, 0x1d, 0x2e, 0x3f, 0x40, 0x51, 0x62, 0x73, 0x84, 0x95, 0xa6, 0xb7, 0xc8, 0xd9, 0xea}
	for _, tc := range []struct {
		in   []string
		want shortener.ClickRequest
	}{
		{[]string{"1733250000.123-5f0c1d2e3f40516273849 5a6b7c8d9ea"}, shortener.ClickRequest{}},
		{[]string{"1733250000.123-5f0c1d2e3f405162738495a6b7c8d9ea"}, shortener.ClickRequest{ID: id, At: 1733250000123}},
		{[]string{"1733250000.123-5F0C1D2E3F405162738495A6B7C8D9EA"}, shortener.ClickRequest{ID: id, At: 1733250000123}},
		{nil, shortener.ClickRequest{}},
		{[]string{""}, shortener.ClickRequest{}},
		{[]string{"1733250000.123-5f0c1d2e3f405162738495a6b7c8d9ea", "1733250000.123-5f0c1d2e3f405162738495a6b7c8d9ea"}, shortener.ClickRequest{}},
		{[]string{"1733250000-5f0c1d2e3f405162738495a6b7c8d9ea"}, shortener.ClickRequest{}},
		{[]string{"1733250000.12-5f0c1d2e3f405162738495a6b7c8d9ea"}, shortener.ClickRequest{}},
		{[]string{"1733250000.123-5f0c1d2e3f405162738495a6b7c8d9e"}, shortener.ClickRequest{}},
		{[]string{"1733250000.123-5f0c1d2e3f405162738495a6b7c8d9eg"}, shortener.ClickRequest{}},
		{[]string{"-1733250000.123-5f0c1d2e3f405162738495a6b7c8d9ea"}, shortener.ClickRequest{}},
		{[]string{"17332500001234567.123-5f0c1d2e3f405162738495a6b7c8d9ea"}, shortener.ClickRequest{}},
		{[]string{"0.000-00000000000000000000000000000000"}, shortener.ClickRequest{}},
	} {
		if got := clickRequest(tc.in); got != tc.want {
			t.Errorf("clickRequest(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}
