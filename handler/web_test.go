package handler

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"shortener"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

func newPagesHandler(f *fakeLinks) *Handler {
	return mustNew(Config{BaseURL: "http://sho.rt", Instance: "app9", AnonymousCreate: true, Pages: true,
		Policy: NewURLPolicy("http://sho.rt", nil, nil, false)}, Deps{
		Resolver: f, Links: f, IDs: &seqIDs{}, Ready: f,
		Keys: NewKeyring(nil, []string{"k3y"}, []string{"adm1n"}, time.Second, time.Now, discardLogger()),
		Log:  discardLogger(), Now: func() time.Time { return now },
	})
}

// browse sends a browser's request: it accepts HTML first.
func browse(h http.Handler, method, path string, form url.Values, header ...string) *httptest.ResponseRecorder {
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req := httptest.NewRequest(method, path, body)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// checkPage fails unless rec is an HTML page with the pages' policy.
func checkPage(t *testing.T, rec *httptest.ResponseRecorder, status int) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d; body:\n%s", rec.Code, status, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("Content-Type %q, want text/html", ct)
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	if rec.Header().Get("Cache-Control") == "" {
		t.Error("no Cache-Control")
	}
}

func TestHomeForm(t *testing.T) {
	h := newPagesHandler(newFakeLinks())
	rec := browse(h, http.MethodGet, "/", nil)
	checkPage(t, rec, http.StatusOK)
	for _, want := range []string{`<form id="shorten"`, `<label for="url">`, `name="idem" value="web-`, `<select id="redirect"`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("home page lacks %s", want)
		}
	}
}

func TestShortenWithoutJavaScript(t *testing.T) {
	f := newFakeLinks()
	h := newPagesHandler(f)
	form := url.Values{"url": {"https://example.com/a?b=1"}, "alias": {"launch"}, "redirect": {"307"},
		"expires": {"2027-01-31T23:59"}, "idem": {"web-1"}}
	rec := browse(h, http.MethodPost, "/", form)
	checkPage(t, rec, http.StatusCreated)
	body := rec.Body.String()
	for _, want := range []string{`value="http://sho.rt/launch"`, `src="/qr/launch"`, `href="/launch+"`, "example.com", "2027-01-31 23:59 UTC"} {
		if !strings.Contains(body, want) {
			t.Errorf("answer lacks %s:\n%s", want, body)
		}
	}
	l, err := f.Link(t.Context(), "launch")
	if err != nil {
		t.Fatal(err)
	}
	if l.Redirect != 307 || l.ExpiresAt != time.Date(2027, 1, 31, 23, 59, 0, 0, time.UTC) || l.URL != "https://example.com/a?b=1" {
		t.Errorf("stored %+v", l)
	}
	// The same form sent again (a reload, a double click) replays the
	// first answer rather than making a second link.
	if rec := browse(h, http.MethodPost, "/", form); rec.Code != http.StatusCreated {
		t.Fatalf("resubmit: %d", rec.Code)
	}
	if f.creates != 1 {
		t.Errorf("%d links made, want 1", f.creates)
	}
}

func TestShortenFieldErrors(t *testing.T) {
	f := newFakeLinks()
	f.links["taken"] = shortener.Link{Code: "taken", URL: "https://example.com/"}
	h := newPagesHandler(f)
	for _, tc := range []struct {
		name   string
		form   url.Values
		status int
		field  string
		msg    string
	}{
		{"empty", url.Values{"url": {""}}, 400, "url", "enter the URL"},
		{"scheme", url.Values{"url": {"ftp://example.com/x"}}, 400, "url", "http"},
		{"not a URL", url.Values{"url": {"not a url"}}, 400, "url", ""},
		{"alias chars", url.Values{"url": {"https://example.com/"}, "alias": {"a b!"}}, 400, "alias", "letters, digits"},
		{"alias taken", url.Values{"url": {"https://example.com/"}, "alias": {"taken"}}, 409, "alias", "taken"},
		{"past expiry", url.Values{"url": {"https://example.com/"}, "expires": {"2020-01-01T00:00"}}, 400, "expires", "future"},
		{"bad expiry", url.Values{"url": {"https://example.com/"}, "expires": {"soon"}}, 400, "expires", "date and time"},
		{"redirect", url.Values{"url": {"https://example.com/"}, "redirect": {"303"}}, 400, "redirect", "301, 302, 307 or 308"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := browse(h, http.MethodPost, "/", tc.form)
			checkPage(t, rec, tc.status)
			doc := parseHTML(t, rec.Body.String())
			errEl := byID(doc, tc.field+"-error")
			if errEl == nil {
				t.Fatalf("no #%s-error in:\n%s", tc.field, rec.Body)
			}
			if got := textOf(errEl); !strings.Contains(got, tc.msg) {
				t.Errorf("#%s-error says %q, want it to mention %q", tc.field, got, tc.msg)
			}
			in := byID(doc, tc.field)
			if attr(in, "aria-invalid") != "true" || !strings.Contains(attr(in, "aria-describedby"), tc.field+"-error") {
				t.Errorf("#%s is not marked invalid and described by its error", tc.field)
			}
			if v := tc.form.Get(tc.field); tc.field != "redirect" && attr(in, "value") != v {
				t.Errorf("#%s value %q, want what was typed, %q", tc.field, attr(in, "value"), v)
			}
		})
	}
	if f.creates != 0 {
		t.Errorf("%d links made by invalid forms", f.creates)
	}
}

func TestShortenRefusesCrossOrigin(t *testing.T) {
	f := newFakeLinks()
	h := newPagesHandler(f)
	rec := browse(h, http.MethodPost, "/", url.Values{"url": {"https://example.com/"}}, "Sec-Fetch-Site", "cross-site")
	checkPage(t, rec, http.StatusForbidden)
	if f.creates != 0 {
		t.Error("a cross-site post made a link")
	}
}

// TestErrorPages: browsers get pages for the redirect path's errors, API
// clients keep JSON, the API keeps JSON even for browsers.
func TestErrorPages(t *testing.T) {
	f := newFakeLinks()
	f.links["gone1"] = shortener.Link{Code: "gone1", URL: "https://example.com/", DeletedAt: now.Add(-time.Hour)}
	f.links["old1"] = shortener.Link{Code: "old1", URL: "https://example.com/", ExpiresAt: now.Add(-time.Minute)}
	h := newPagesHandler(f)
	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/nope1", 404, "This link does not exist"},
		{"/gone1", 410, "This link has expired or was removed"},
		{"/old1", 410, "This link has expired or was removed"},
		{"/gone1+", 410, "This link has expired or was removed"},
		{"/nope1+", 404, "This link does not exist"},
	} {
		rec := browse(h, http.MethodGet, tc.path, nil)
		checkPage(t, rec, tc.status)
		if !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("GET %s: page lacks %q", tc.path, tc.want)
		}
		api := do(h, http.MethodGet, tc.path, "", "Accept", "*/*")
		if api.Code != tc.status || !strings.HasPrefix(api.Header().Get("Content-Type"), "application/json") {
			t.Errorf("GET %s as an API client: %d %s, want %d JSON", tc.path, api.Code, api.Header().Get("Content-Type"), tc.status)
		}
		if rec.Header().Get("Vary") != "Accept" || api.Header().Get("Vary") != "Accept" {
			t.Errorf("GET %s: Vary %q (page), %q (JSON); want Accept on both", tc.path, rec.Header().Get("Vary"), api.Header().Get("Vary"))
		}
	}
	if rec := browse(h, http.MethodGet, "/api/v1/links/nope1", nil); !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		t.Errorf("the API answered a browser with %s, want JSON", rec.Header().Get("Content-Type"))
	}
	f.err = shortener.ErrUnavailable
	rec := browse(h, http.MethodGet, "/any1", nil)
	checkPage(t, rec, http.StatusServiceUnavailable)
	if rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "temporarily unavailable") {
		t.Errorf("503 page: Retry-After %q, body:\n%s", rec.Header().Get("Retry-After"), rec.Body)
	}
}

func TestTooManyRequestsPage(t *testing.T) {
	h := mustNew(Config{BaseURL: "http://sho.rt", AnonymousCreate: true, Pages: true, CreateRate: 0.001, CreateBurst: 1,
		Policy: NewURLPolicy("http://sho.rt", nil, nil, false)}, Deps{Resolver: newFakeLinks(), Links: newFakeLinks(), IDs: &seqIDs{},
		Log: discardLogger(), Now: func() time.Time { return now }})
	form := url.Values{"url": {"https://example.com/"}}
	if rec := browse(h, http.MethodPost, "/", form); rec.Code != http.StatusCreated {
		t.Fatalf("first create: %d", rec.Code)
	}
	rec := browse(h, http.MethodPost, "/", form)
	checkPage(t, rec, http.StatusTooManyRequests)
	if !strings.Contains(rec.Body.String(), "Too many requests") {
		t.Errorf("429 page:\n%s", rec.Body)
	}
}

func TestAcceptsHTML(t *testing.T) {
	for _, tc := range []struct {
		accept string
		want   bool
	}{
		{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", true},
		{"*/*", false},
		{"", false},
		{"application/json", false},
		{"application/json, text/html;q=0.5", true},
		{"text/html;q=0", false},
		{"TEXT/HTML", true},
		{"text/html; q=0.000", false},
	} {
		if got := acceptsHTML(tc.accept); got != tc.want {
			t.Errorf("acceptsHTML(%q) = %v, want %v", tc.accept, got, tc.want)
		}
	}
}

func TestPreview(t *testing.T) {
	f := newFakeLinks()
	f.links["abc"] = shortener.Link{Code: "abc", URL: "https://docs.example.com/guide?x=1", Redirect: 302, CreatedAt: now.Add(-48 * time.Hour)}
	h := newPagesHandler(f)
	rec := browse(h, http.MethodGet, "/abc+", nil)
	checkPage(t, rec, http.StatusOK)
	doc := parseHTML(t, rec.Body.String())
	if got := textOf(findClass(doc, "bighost")); !strings.Contains(got, "docs.example.com") {
		t.Errorf("host shown as %q", got)
	}
	body := rec.Body.String()
	for _, want := range []string{"https://docs.example.com/guide?x=1", `href="/abc"`} {
		if !strings.Contains(body, want) {
			t.Errorf("preview lacks %s", want)
		}
	}
	// The redirect itself is untouched by the pages.
	if rec := do(h, http.MethodGet, "/abc", ""); rec.Code != 302 || rec.Header().Get("Location") != "https://docs.example.com/guide?x=1" {
		t.Errorf("redirect: %d %q", rec.Code, rec.Header().Get("Location"))
	}
}

func TestQRCode(t *testing.T) {
	h := newPagesHandler(newFakeLinks())
	rec := browse(h, http.MethodGet, "/qr/abc", nil)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "image/svg+xml" {
		t.Fatalf("GET /qr/abc: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	svg := rec.Body.String()
	// Version 2 (25 modules) holds "http://sho.rt/abc" at level M; with
	// the quiet zone the picture is 33 modules wide.
	if !strings.HasPrefix(svg, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 33 33"`) || !strings.HasSuffix(svg, "</svg>") {
		t.Errorf("QR SVG:\n%s", svg)
	}
	if rec := browse(h, http.MethodGet, "/qr/a%3Cb", nil); rec.Code != 404 {
		t.Errorf("QR of a non-code: %d, want 404", rec.Code)
	}
}

func TestStaticAssets(t *testing.T) {
	h := newPagesHandler(newFakeLinks())
	page := browse(h, http.MethodGet, "/", nil).Body.String()
	m := regexp.MustCompile(`href="(/static/app\.css\?v=([0-9a-f]+))"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("the page links no versioned app.css")
	}
	rec := browse(h, http.MethodGet, m[1], nil)
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/css") || rec.Header().Get("Cache-Control") != assetImmutable {
		t.Errorf("GET %s: %d %s %s", m[1], rec.Code, rec.Header().Get("Content-Type"), rec.Header().Get("Cache-Control"))
	}
	if rec := browse(h, http.MethodGet, m[1], nil, "If-None-Match", `"`+m[2]+`"`); rec.Code != http.StatusNotModified {
		t.Errorf("revalidation: %d, want 304", rec.Code)
	}
	if rec := browse(h, http.MethodGet, "/static/app.css?v=old", nil); rec.Header().Get("Cache-Control") != assetUnversion {
		t.Errorf("stale version cached as %q", rec.Header().Get("Cache-Control"))
	}
	if rec := browse(h, http.MethodGet, "/static/nope.js", nil); rec.Code != 404 {
		t.Errorf("unknown asset: %d", rec.Code)
	}
}

// TestNoPagesWithoutPages: the API-only handler answers JSON as before.
func TestNoPagesWithoutPages(t *testing.T) {
	h := newTestHandler(newFakeLinks())
	if rec := browse(h, http.MethodGet, "/", nil); rec.Code != 404 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		t.Errorf("GET / without pages: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
}

func parseHTML(t *testing.T, s string) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// find returns the first node below n for which ok is true.
func find(n *html.Node, ok func(*html.Node) bool) *html.Node {
	if ok(n) {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := find(c, ok); f != nil {
			return f
		}
	}
	return nil
}

func byID(n *html.Node, id string) *html.Node {
	return find(n, func(n *html.Node) bool { return n.Type == html.ElementNode && attr(n, "id") == id })
}

func findClass(n *html.Node, class string) *html.Node {
	return find(n, func(n *html.Node) bool {
		return n.Type == html.ElementNode && strings.Contains(" "+attr(n, "class")+" ", " "+class+" ")
	})
}

func attr(n *html.Node, key string) string {
	if n == nil {
		return ""
	}
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func textOf(n *html.Node) string {
	if n == nil {
		return ""
	}
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

func TestTrendingPage(t *testing.T) {
	h := newPagesHandler(newFakeLinks())
	rec := browse(h, http.MethodGet, "/trending", nil)
	checkPage(t, rec, http.StatusOK)
	if !strings.Contains(rec.Body.String(), "Trending is not available") {
		t.Errorf("without a ranking the page does not say so:\n%s", rec.Body)
	}
	tr := &fakeTrender{}
	h.d.Trending = tr
	rec = browse(h, http.MethodGet, "/trending?window=24h", nil)
	checkPage(t, rec, http.StatusOK)
	doc := parseHTML(t, rec.Body.String())
	rows := byID(doc, "trend-rows")
	if got := textOf(rows); !strings.Contains(got, "a1") || !strings.Contains(got, "b2") || !strings.Contains(got, "9") {
		t.Errorf("rows: %q", got)
	}
	if tr.window != "24h" || tr.limit != trendLimit {
		t.Errorf("asked the ranking for %s, %d; want 24h, %d", tr.window, tr.limit, trendLimit)
	}
	if cur := find(doc, func(n *html.Node) bool { return attr(n, "aria-current") == "page" }); attr(cur, "data-window") != "24h" {
		t.Errorf("the current window tab is %q", attr(cur, "data-window"))
	}
	if rec := browse(h, http.MethodGet, "/trending?window=7d", nil); rec.Code != http.StatusBadRequest {
		t.Errorf("window=7d: %d, want 400", rec.Code)
	}
}

// TestStatsKey: the key is asked for once, kept in an HttpOnly cookie,
// links made with the form then belong to it, and only its owner (or an
// admin) sees a link's stats.
func TestStatsKey(t *testing.T) {
	f := newFakeLinks()
	f.links["anon1"] = shortener.Link{Code: "anon1", URL: "https://example.com/"}
	h := newPagesHandler(f)
	rec := browse(h, http.MethodGet, "/stats/anon1", nil)
	checkPage(t, rec, http.StatusOK)
	if byID(parseHTML(t, rec.Body.String()), "key") == nil {
		t.Fatal("no key field without a key")
	}
	if rec := browse(h, http.MethodPost, "/settings/key", url.Values{"key": {"wrong"}, "action": {"save"}, "next": {"/stats/anon1"}}); rec.Code != http.StatusUnauthorized || len(rec.Result().Cookies()) != 0 {
		t.Errorf("a wrong key: %d, cookies %v", rec.Code, rec.Result().Cookies())
	}
	rec = browse(h, http.MethodPost, "/settings/key", url.Values{"key": {"k3y"}, "action": {"save"}, "next": {"/stats/anon1"}})
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/stats/anon1" {
		t.Fatalf("saving the key: %d %s", rec.Code, rec.Header().Get("Location"))
	}
	cks := rec.Result().Cookies()
	if len(cks) != 1 || cks[0].Name != keyCookieName || !cks[0].HttpOnly || cks[0].SameSite != http.SameSiteLaxMode || strings.Contains(cks[0].Value, "k3y") {
		t.Fatalf("cookie %+v", cks)
	}
	if hash, ok := h.openKey(cks[0].Value); !ok || hash != HashKey("k3y") || cks[0].MaxAge != 0 || cks[0].Secure {
		t.Errorf("cookie %+v holds %q (%v); want the key's hash, for the session (plain http), not Secure", cks[0], hash, ok)
	}
	ck := "Cookie"
	// Not this key's link: 403, with a way to forget the key.
	rec = browse(h, http.MethodGet, "/stats/anon1", nil, ck, cks[0].String())
	checkPage(t, rec, http.StatusForbidden)
	// A link made with the form now belongs to the key, whose page shows.
	made := browse(h, http.MethodPost, "/", url.Values{"url": {"https://example.com/mine"}, "alias": {"mine1"}}, ck, cks[0].String())
	checkPage(t, made, http.StatusCreated)
	if f.links["mine1"].Owner != HashKey("k3y") {
		t.Errorf("form link owner %q, want the key's", f.links["mine1"].Owner)
	}
	rec = browse(h, http.MethodGet, "/stats/mine1", nil, ck, cks[0].String())
	checkPage(t, rec, http.StatusOK)
	if !strings.Contains(rec.Body.String(), "https://example.com/mine") {
		t.Errorf("the owner's stats page does not show the link:\n%s", rec.Body)
	}
	// A revoked (unknown) key makes no anonymous link.
	rec = browse(h, http.MethodPost, "/", url.Values{"url": {"https://example.com/x"}}, ck, keyCookieName+"="+h.sealKey(HashKey("revoked"), now.Add(time.Hour)))
	checkPage(t, rec, http.StatusUnauthorized)
	// Forgetting the key expires the cookie.
	rec = browse(h, http.MethodPost, "/settings/key", url.Values{"action": {"forget"}, "next": {"//evil.example/"}}, ck, cks[0].String())
	if cks := rec.Result().Cookies(); rec.Code != http.StatusSeeOther || len(cks) != 1 || cks[0].MaxAge >= 0 || rec.Header().Get("Location") != "/" {
		t.Errorf("forget: %d %+v", rec.Code, cks)
	}
}

// TestPagesShowClicks: the owner's stats page shows the chart, the
// referrers and the browser/bot split (the preview shows no clicks:
// TestPreviewFromTheLookupPath).
func TestPagesShowClicks(t *testing.T) {
	f := newFakeLinks()
	f.links["abc"] = shortener.Link{ID: 7, Code: "abc", URL: "https://a.example/", Redirect: 302, CreatedAt: now.Add(-72 * time.Hour), Owner: HashKey("k3y")}
	h := newPagesHandler(f)
	st := &fakeStats{}
	h.d.Stats = st
	key := "Cookie"
	for _, tc := range []struct {
		interval string
		daily    bool
		bars     int
	}{{"", false, statsHours}, {"day", true, statsDays}} {
		rec := browse(h, http.MethodGet, "/stats/abc?interval="+tc.interval, nil, key, keyCookieName+"="+h.sealKey(HashKey("k3y"), now.Add(time.Hour)))
		checkPage(t, rec, http.StatusOK)
		doc := parseHTML(t, rec.Body.String())
		if got := textOf(byID(doc, "total")); got != "5" {
			t.Errorf("interval %q: total %q", tc.interval, got)
		}
		bars := 0
		find(doc, func(n *html.Node) bool {
			if n.Data == "rect" && attr(n, "class") == "bar" {
				bars++
			}
			return false
		})
		if bars != tc.bars || st.daily != tc.daily {
			t.Errorf("interval %q: %d bars (daily=%v), want %d", tc.interval, bars, st.daily, tc.bars)
		}
		body := textOf(doc)
		for _, want := range []string{"t.co", "direct or hidden", "Browsers", "80%", "Bots", "20%"} {
			if !strings.Contains(body, want) {
				t.Errorf("interval %q: stats page lacks %q", tc.interval, want)
			}
		}
		// The analytics: unique visitors, and each dimension's table
		// (most clicks first, shares of the dimension's sum).
		if got := textOf(byID(doc, "visitors")); got != "4" {
			t.Errorf("interval %q: visitors %q, want 4", tc.interval, got)
		}
		for id, want := range map[string]string{
			"dim-country": "US360%", "dim-browser": "chrome480%", "dim-os": "ios240%", "dim-device": "desktop240%",
		} {
			if got := strings.Join(strings.Fields(textOf(byID(doc, id))), ""); !strings.Contains(got, want) {
				t.Errorf("interval %q: %s reads %q, want it to hold %q", tc.interval, id, got, want)
			}
		}
	}
}

// TestTopShares: a dimension's table is its values by clicks (ties by
// name), at most n and the rest summed, as shares of the whole.
func TestTopShares(t *testing.T) {
	got := topShares(map[string]int64{"a": 1, "b": 5, "c": 1, "d": 3}, 2)
	want := []share{{"b", 5, 50}, {"d", 3, 30}, {"other values", 2, 20}}
	if !slices.Equal(got, want) {
		t.Errorf("topShares = %v, want %v", got, want)
	}
	if got := topShares(nil, 3); len(got) != 0 {
		t.Errorf("topShares(nil) = %v", got)
	}
}

// cachedOnly resolves links as the cache does: without their ID and
// creation date, which Redis does not keep. It counts the lookups.
type cachedOnly struct {
	f       *fakeLinks
	lookups *int
}

func (c cachedOnly) Resolve(ctx context.Context, code string) (shortener.Link, error) {
	*c.lookups++
	l, err := c.f.Link(ctx, code)
	return shortener.Link{Code: l.Code, URL: l.URL, Redirect: l.Redirect, ExpiresAt: l.ExpiresAt, DeletedAt: l.DeletedAt}, err
}

// TestPreviewFromTheLookupPath: anyone may ask for a preview, so it
// answers from the lookup path a redirect takes and never reads the
// source of truth or the click counts itself (a flood of previews was a
// MySQL query and a stats scan each); it shows where the link goes and
// nothing only its owner may see. It works while MySQL is down, from the
// cache.
func TestPreviewFromTheLookupPath(t *testing.T) {
	f := newFakeLinks()
	f.links["abc"] = shortener.Link{ID: 7, Code: "abc", URL: "https://a.example/", Redirect: 302, CreatedAt: now.Add(-time.Hour), Owner: HashKey("k3y")}
	h := newPagesHandler(f)
	lookups := 0
	h.d.Resolver = cachedOnly{f, &lookups}
	st := &fakeStats{}
	h.d.Stats = st
	h.d.Links = unavailableLinks{f} // any read of the source of truth fails the page
	for range 3 {
		rec := browse(h, http.MethodGet, "/abc+", nil)
		checkPage(t, rec, http.StatusOK)
		doc := parseHTML(t, rec.Body.String())
		if got := textOf(byID(doc, "dest-host")); got != "a.example" {
			t.Errorf("preview shows host %q, want a.example", got)
		}
		if byID(doc, "clicks") != nil || strings.Contains(rec.Body.String(), "Created") {
			t.Errorf("preview shows the owner's data (clicks, creation):\n%s", rec.Body)
		}
	}
	if lookups != 3 || st.link != 0 {
		t.Errorf("3 previews: %d lookups, stats read for link %d; want 3 lookups and no stats read", lookups, st.link)
	}
	rec := browse(h, http.MethodGet, "/nope+", nil)
	checkPage(t, rec, http.StatusNotFound)
}

// unavailableLinks is the source of truth while MySQL is down.
type unavailableLinks struct{ *fakeLinks }

func (unavailableLinks) Link(context.Context, string) (shortener.Link, error) {
	return shortener.Link{}, shortener.ErrUnavailable
}
