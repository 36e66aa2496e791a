package handler

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"shortener"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// newLinksHandler is newPagesHandler with what My links calls: the
// lister, editor, exporter and invalidator the API's routes use.
func newLinksHandler(f *fakeLinks, inv Invalidator) *Handler {
	return mustNew(Config{BaseURL: "http://sho.rt", Instance: "app9", AnonymousCreate: true, Pages: true,
		Policy: NewURLPolicy("http://sho.rt", nil, nil, false)}, Deps{
		Resolver: f, Links: f, IDs: &seqIDs{}, Ready: f, Invalidator: inv,
		Lister: f, Editor: f, Exporter: f,
		Keys: NewKeyring(nil, []string{"k3y", "other-k3y"}, []string{"adm1n"}, time.Second, time.Now, discardLogger()),
		Log:  discardLogger(), Now: func() time.Time { return now },
	})
}

// keptKey is the Cookie header of a browser that kept key.
func keptKey(h *Handler, key string) string {
	return keyCookieName + "=" + h.sealKey(HashKey(key), now.Add(time.Hour))
}

// rowCodes are the codes of the page's link rows, in order.
func rowCodes(doc *html.Node) []string {
	var out []string
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "li" && strings.HasPrefix(attr(n, "id"), "link-") {
			out = append(out, strings.TrimPrefix(attr(n, "id"), "link-"))
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out
}

// myLinks fills f with 25 links of "k3y" (m01 oldest … m25 newest; m25
// disabled, m24 expired, m23 password-protected, m22 with a visit
// limit, every fifth tagged launch), one of them deleted, and one link
// of another key.
func myLinks(f *fakeLinks) {
	k := HashKey("k3y")
	for i := 1; i <= 25; i++ {
		code := fmt.Sprintf("m%02d", i)
		l := shortener.Link{ID: int64(i), Code: code, URL: fmt.Sprintf("https://site%d.example/page", i), Redirect: 302,
			CreatedAt: now.Add(time.Duration(i-30) * time.Hour), Owner: k}
		if i%5 == 0 {
			l.Tags = []string{"launch", "q4"}
		}
		f.links[code] = l
	}
	set := func(code string, change func(*shortener.Link)) {
		l := f.links[code]
		change(&l)
		f.links[code] = l
	}
	set("m25", func(l *shortener.Link) { l.Disabled = true })
	set("m24", func(l *shortener.Link) { l.ExpiresAt = now.Add(-time.Minute) })
	set("m23", func(l *shortener.Link) { l.PasswordHash = "$2a$10$hash" })
	set("m22", func(l *shortener.Link) { l.MaxVisits = 3 })
	f.links["gone1"] = shortener.Link{ID: 26, Code: "gone1", URL: "https://site-gone.example/", Redirect: 302, CreatedAt: now, DeletedAt: now, Owner: k}
	f.links["theirs"] = shortener.Link{ID: 27, Code: "theirs", URL: "https://site-theirs.example/", Redirect: 302, CreatedAt: now, Owner: HashKey("other-k3y")}
}

// TestLinksPageAsksForKey: without a key kept, or with one revoked
// since, My links asks for it, as the stats page does; the key form
// comes back to it, and so does the export.
func TestLinksPageAsksForKey(t *testing.T) {
	f := newFakeLinks()
	myLinks(f)
	h := newLinksHandler(f, nil)
	rec := browse(h, http.MethodGet, "/links", nil)
	checkPage(t, rec, http.StatusOK)
	doc := parseHTML(t, rec.Body.String())
	if byID(doc, "key") == nil || len(rowCodes(doc)) != 0 {
		t.Fatalf("without a key: no key field, or links shown:\n%s", rec.Body)
	}
	if next := find(doc, func(n *html.Node) bool { return attr(n, "name") == "next" }); attr(next, "value") != "/links" {
		t.Errorf("the key form goes back to %q, want /links", attr(next, "value"))
	}
	rec = browse(h, http.MethodGet, "/links", nil, "Cookie", keptKey(h, "revoked"))
	checkPage(t, rec, http.StatusOK)
	if got := textOf(byID(parseHTML(t, rec.Body.String()), "key-error")); !strings.Contains(got, "not valid any more") {
		t.Errorf("a revoked key: key error %q", got)
	}
	rec = browse(h, http.MethodPost, "/settings/key", url.Values{"key": {"wrong"}, "action": {"save"}, "next": {"/links"}})
	checkPage(t, rec, http.StatusUnauthorized)
	if doc := parseHTML(t, rec.Body.String()); textOf(byID(doc, "links-h")) != "My links" || byID(doc, "key-error") == nil {
		t.Errorf("a wrong key typed on My links is not answered there with its error:\n%s", rec.Body)
	}
	rec = browse(h, http.MethodPost, "/settings/key", url.Values{"key": {"k3y"}, "action": {"save"}, "next": {"/links"}})
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/links" {
		t.Errorf("keeping the key: %d to %q, want 303 to /links", rec.Code, rec.Header().Get("Location"))
	}
	if rec := browse(h, http.MethodGet, "/links/export", nil); rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/links" {
		t.Errorf("export without a key: %d to %q, want 303 to /links", rec.Code, rec.Header().Get("Location"))
	}
}

// TestLinksPageLists: the key's links, newest first, a page at a time
// along the API's cursor, searched by q and tag; never another key's or
// a deleted one; each with its state.
func TestLinksPageLists(t *testing.T) {
	f := newFakeLinks()
	myLinks(f)
	h := newLinksHandler(f, nil)
	ck := keptKey(h, "k3y")
	rec := browse(h, http.MethodGet, "/links", nil, "Cookie", ck)
	checkPage(t, rec, http.StatusOK)
	doc := parseHTML(t, rec.Body.String())
	var want []string
	for i := 25; i > 25-linksPageSize; i-- {
		want = append(want, fmt.Sprintf("m%02d", i))
	}
	if got := rowCodes(doc); !slices.Equal(got, want) {
		t.Fatalf("first page lists %v, want %v", got, want)
	}
	for code, states := range map[string]string{"m25": "Disabled", "m24": "Expired", "m23": "Active Password", "m22": "Active At most 3 visits", "m21": "Active"} {
		if got := strings.Join(strings.Fields(textOf(findClass(byID(doc, "link-"+code), "states"))), " "); got != states {
			t.Errorf("%s shows the states %q, want %q", code, got, states)
		}
	}
	row := textOf(byID(doc, "link-m20"))
	for _, want := range []string{"http://sho.rt/m20", "site20.example", "https://site20.example/page", "launch", "q4", "2026-12-03 02:00 UTC"} {
		if !strings.Contains(row, want) {
			t.Errorf("row m20 lacks %q: %s", want, row)
		}
	}
	if attr(find(byID(doc, "link-m20"), func(n *html.Node) bool { return attr(n, "class") == "tag" }), "href") != "/links?tag=launch" {
		t.Error("a tag does not link to its filter")
	}
	older := attr(byID(doc, "older"), "href")
	if !strings.HasPrefix(older, "/links?cursor=") {
		t.Fatalf("no link to the older links: %q", older)
	}
	rec = browse(h, http.MethodGet, older, nil, "Cookie", ck)
	checkPage(t, rec, http.StatusOK)
	doc = parseHTML(t, rec.Body.String())
	if got := rowCodes(doc); !slices.Equal(got, []string{"m05", "m04", "m03", "m02", "m01"}) || byID(doc, "older") != nil {
		t.Errorf("second page lists %v (older link %v), want m05 to m01 and no older page", got, byID(doc, "older") != nil)
	}
	if body := rec.Body.String(); !strings.Contains(body, `href="/links">Newest links`) {
		t.Error("the second page has no way back to the first")
	}

	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"?q=site2", []string{"m25", "m24", "m23", "m22", "m21", "m20", "m02"}},
		{"?q=m1", []string{"m19", "m18", "m17", "m16", "m15", "m14", "m13", "m12", "m11", "m10"}},
		{"?tag=Launch", []string{"m25", "m20", "m15", "m10", "m05"}},
		{"?q=site1&tag=launch", []string{"m15", "m10"}},
		{"?q=theirs", nil},
		{"?q=gone", nil},
	} {
		rec := browse(h, http.MethodGet, "/links"+tc.query, nil, "Cookie", ck)
		checkPage(t, rec, http.StatusOK)
		doc := parseHTML(t, rec.Body.String())
		if got := rowCodes(doc); !slices.Equal(got, tc.want) {
			t.Errorf("%s lists %v, want %v", tc.query, got, tc.want)
		}
		if tc.want == nil && byID(doc, "no-links") == nil {
			t.Errorf("%s: no word that nothing matches", tc.query)
		}
	}
	// A page's filters stay in the search form and in its links.
	rec = browse(h, http.MethodGet, "/links?q=site&tag=launch", nil, "Cookie", ck)
	doc = parseHTML(t, rec.Body.String())
	if attr(byID(doc, "q"), "value") != "site" || attr(byID(doc, "tag"), "value") != "launch" {
		t.Errorf("the search form does not show the search: q %q, tag %q", attr(byID(doc, "q"), "value"), attr(byID(doc, "tag"), "value"))
	}

	// A search the API refuses is refused here, by the same rule, next to
	// its field.
	for _, tc := range []struct{ query, field, msg string }{
		{"?tag=not+ok", "tag", "a-z, 0-9"},
		{"?q=" + strings.Repeat("x", maxQuery+1), "q", "the limit is 256"},
		{"?cursor=forged", "form", "cursor is not one this API returned"},
	} {
		rec := browse(h, http.MethodGet, "/links"+tc.query, nil, "Cookie", ck)
		checkPage(t, rec, http.StatusBadRequest)
		doc := parseHTML(t, rec.Body.String())
		if got := textOf(byID(doc, tc.field+"-error")); !strings.Contains(got, tc.msg) {
			t.Errorf("%s: #%s-error says %q, want it to mention %q", tc.query[:min(20, len(tc.query))], tc.field, got, tc.msg)
		}
		if in := byID(doc, tc.field); in != nil && (attr(in, "aria-invalid") != "true" || !strings.Contains(attr(in, "aria-describedby"), tc.field+"-error")) {
			t.Errorf("#%s is not marked invalid and described by its error", tc.field)
		}
	}
}

// TestLinksPageActions: each form of a row changes the link by the
// API's own code (the change committed, then invalidated) and answers a
// 303 back to the list it was on, whose next answer says what was done;
// what the API would refuse is refused next to its field, and nothing
// changes.
func TestLinksPageActions(t *testing.T) {
	f := newFakeLinks()
	myLinks(f)
	inv := &fakeInvalidator{}
	h := newLinksHandler(f, inv)
	ck := keptKey(h, "k3y")
	post := func(code string, form url.Values, header ...string) *httptest.ResponseRecorder {
		form.Set("q", "site2") // the list the form was on
		return browse(h, http.MethodPost, "/links/"+code, form, append([]string{"Cookie", ck}, header...)...)
	}
	for _, tc := range []struct {
		name  string
		code  string
		form  url.Values
		check func(shortener.Link) bool
		flash string
	}{
		{"edit the destination", "m21", url.Values{"action": {"edit"}, "url": {" https://New.example/landing "}},
			func(l shortener.Link) bool { return l.URL == "https://new.example/landing" }, "The destination of m21 is changed."},
		{"disable", "m21", url.Values{"action": {"disable"}},
			func(l shortener.Link) bool { return l.Disabled }, "m21 is disabled: it answers 410 until you enable it."},
		{"enable", "m21", url.Values{"action": {"enable"}},
			func(l shortener.Link) bool { return !l.Disabled }, "m21 is enabled: it redirects again."},
		{"set a password", "m21", url.Values{"action": {"password"}, "password": {"open sesame"}},
			func(l shortener.Link) bool { return passwordMatches(l.PasswordHash, "open sesame") }, "m21 now asks for its password before it opens."},
		{"remove the password", "m21", url.Values{"action": {"clear-password"}},
			func(l shortener.Link) bool { return l.PasswordHash == "" }, "m21 no longer asks for a password."},
		{"delete", "m22", url.Values{"action": {"delete"}, "confirm": {"yes"}},
			func(l shortener.Link) bool { return !l.DeletedAt.IsZero() }, "m22 is deleted: it answers 410 from now on."},
	} {
		inv.codes = nil
		rec := post(tc.code, tc.form)
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/links?q=site2" {
			t.Fatalf("%s: %d to %q, want 303 to /links?q=site2; body:\n%s", tc.name, rec.Code, rec.Header().Get("Location"), rec.Body)
		}
		if l := f.links[tc.code]; !tc.check(l) {
			t.Errorf("%s: the link is now %+v", tc.name, l)
		}
		if !slices.Equal(inv.codes, []string{tc.code}) {
			t.Errorf("%s: invalidated %v, want [%s]", tc.name, inv.codes, tc.code)
		}
		var flash *http.Cookie
		for _, c := range rec.Result().Cookies() {
			if c.Name == flashCookieName {
				flash = c
			}
		}
		if flash == nil || !flash.HttpOnly || flash.Path != "/links" {
			t.Fatalf("%s: flash cookie %+v", tc.name, flash)
		}
		list := browse(h, http.MethodGet, "/links?q=site2", nil, "Cookie", ck+"; "+flash.Name+"="+flash.Value)
		checkPage(t, list, http.StatusOK)
		if got := textOf(byID(parseHTML(t, list.Body.String()), "flash")); got != tc.flash {
			t.Errorf("%s: the list says %q, want %q", tc.name, got, tc.flash)
		}
		if cs := list.Result().Cookies(); len(cs) != 1 || cs[0].Name != flashCookieName || cs[0].MaxAge >= 0 {
			t.Errorf("%s: the list does not forget its flash: %+v", tc.name, cs)
		}
	}
	if slices.Contains(rowCodes(parseHTML(t, browse(h, http.MethodGet, "/links", nil, "Cookie", ck).Body.String())), "m22") {
		t.Error("a deleted link is still listed")
	}
	// A flash cookie this page did not write says nothing.
	if rec := browse(h, http.MethodGet, "/links", nil, "Cookie", ck+"; "+flashCookieName+"=pwned.<b>x</b>"); byID(parseHTML(t, rec.Body.String()), "flash") != nil {
		t.Error("a forged flash cookie is shown")
	}

	// Refused by the API's rules: the list again, in the error's status,
	// with the message next to the field in the link's row, opened, what
	// was typed kept.
	for _, tc := range []struct {
		name, code string
		form       url.Values
		status     int
		field, msg string
		typed      string
		fieldInput string
	}{
		{"a destination of another scheme", "m20", url.Values{"action": {"edit"}, "url": {"ftp://example.com/f"}}, 400, "url", `url scheme "ftp" is not allowed`, "ftp://example.com/f", "url-m20"},
		{"a destination back at the shortener", "m20", url.Values{"action": {"edit"}, "url": {"http://sho.rt/x"}}, 400, "url", "points back at this shortener", "http://sho.rt/x", "url-m20"},
		{"no destination", "m20", url.Values{"action": {"edit"}, "url": {""}}, 400, "url", "url is required", "", "url-m20"},
		{"no password", "m20", url.Values{"action": {"password"}, "password": {""}}, 400, "password", "password must be 1 to 128 bytes", "", "password-m20"},
		{"a password too long", "m20", url.Values{"action": {"password"}, "password": {strings.Repeat("p", 129)}}, 400, "password", "got 129", "", "password-m20"},
		{"a delete not confirmed", "m20", url.Values{"action": {"delete"}}, 400, "confirm", "tick the box", "", "confirm-m20"},
	} {
		inv.codes = nil
		before := fmt.Sprint(f.links[tc.code])
		rec := post(tc.code, tc.form)
		checkPage(t, rec, tc.status)
		doc := parseHTML(t, rec.Body.String())
		id := tc.field + "-" + tc.code
		if got := textOf(byID(doc, id+"-error")); !strings.Contains(got, tc.msg) {
			t.Errorf("%s: #%s-error says %q, want it to mention %q", tc.name, id, got, tc.msg)
		}
		in := byID(doc, tc.fieldInput)
		if attr(in, "aria-invalid") != "true" || !strings.Contains(attr(in, "aria-describedby"), id+"-error") {
			t.Errorf("%s: #%s is not marked invalid and described by its error", tc.name, tc.fieldInput)
		}
		if tc.field == "url" && attr(in, "value") != tc.typed {
			t.Errorf("%s: #%s holds %q, want what was typed, %q", tc.name, tc.fieldInput, attr(in, "value"), tc.typed)
		}
		if tc.field == "password" && attr(in, "value") != "" {
			t.Errorf("%s: the password is written back into the page", tc.name)
		}
		row := byID(doc, "link-"+tc.code)
		if row == nil {
			t.Fatalf("%s: the link's row is not on the page:\n%s", tc.name, rec.Body)
		}
		if find(row, func(n *html.Node) bool {
			return n.Data == "details" && attr(n, "class") == "manage" && hasAttr(n, "open")
		}) == nil {
			t.Errorf("%s: the row's forms are not open", tc.name)
		}
		if got := rowCodes(doc); len(got) == 0 || got[0] != "m25" || slices.Contains(got, "m01") {
			t.Errorf("%s: not the list the form was on (q=site2): %v", tc.name, got)
		}
		if got := fmt.Sprint(f.links[tc.code]); got != before || len(inv.codes) != 0 {
			t.Errorf("%s: the link changed to %s (invalidated %v)", tc.name, got, inv.codes)
		}
	}

	// Not this browser's to change: nothing changes, nothing is
	// invalidated.
	before := fmt.Sprint(f.links)
	inv.codes = nil
	for _, tc := range []struct {
		name   string
		code   string
		form   url.Values
		header []string
		status int
		check  func(*html.Node) bool
	}{
		{"a form from another site", "m21", url.Values{"action": {"disable"}}, []string{"Sec-Fetch-Site", "cross-site"}, 403, nil},
		{"a form from another origin", "m21", url.Values{"action": {"disable"}}, []string{"Origin", "https://evil.example"}, 403, nil},
		{"no key kept", "m21", url.Values{"action": {"disable"}}, []string{"Cookie", ""}, 401,
			func(doc *html.Node) bool { return byID(doc, "key") != nil && byID(doc, "key-error") != nil }},
		{"a revoked key", "m21", url.Values{"action": {"disable"}}, []string{"Cookie", keptKey(h, "revoked")}, 401,
			func(doc *html.Node) bool { return byID(doc, "key") != nil }},
		{"another key's link", "theirs", url.Values{"action": {"disable"}}, nil, 403,
			func(doc *html.Node) bool { return strings.Contains(textOf(doc), "belongs to another API key") }},
		{"another key's link deleted", "theirs", url.Values{"action": {"delete"}, "confirm": {"yes"}}, nil, 403, nil},
		{"a link deleted already", "m22", url.Values{"action": {"enable"}}, nil, 410, nil},
		{"no such link", "nosuch", url.Values{"action": {"disable"}}, nil, 404, nil},
		{"no such action", "m21", url.Values{"action": {"transfer"}}, nil, 400, nil},
	} {
		rec := post(tc.code, tc.form, tc.header...)
		checkPage(t, rec, tc.status)
		if tc.check != nil && !tc.check(parseHTML(t, rec.Body.String())) {
			t.Errorf("%s: the page is not what it should be:\n%s", tc.name, rec.Body)
		}
	}
	if after := fmt.Sprint(f.links); after != before || len(inv.codes) != 0 {
		t.Errorf("refused forms changed links (invalidated %v)", inv.codes)
	}
	// An admin key manages every link, as with the API.
	if rec := browse(h, http.MethodPost, "/links/theirs", url.Values{"action": {"disable"}}, "Cookie", keptKey(h, "adm1n")); rec.Code != http.StatusSeeOther || !f.links["theirs"].Disabled {
		t.Errorf("an admin key's disable: %d, disabled %v", rec.Code, f.links["theirs"].Disabled)
	}
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

// TestLinksExport: the page's download is the API's export of the kept
// key's links, as an attachment.
func TestLinksExport(t *testing.T) {
	f := newFakeLinks()
	myLinks(f)
	h := newLinksHandler(f, nil)
	ck := keptKey(h, "k3y")
	rec := browse(h, http.MethodGet, "/links", nil, "Cookie", ck)
	if href := attr(byID(parseHTML(t, rec.Body.String()), "export-csv"), "href"); href != "/links/export?format=csv" {
		t.Fatalf("the page links to the export as %q", href)
	}
	rec = browse(h, http.MethodGet, "/links/export?format=csv", nil, "Cookie", ck)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/csv; charset=utf-8" ||
		rec.Header().Get("Content-Disposition") != `attachment; filename="links.csv"` || rec.Header().Get("Cache-Control") != "private, no-store" {
		t.Fatalf("export: %d %v", rec.Code, rec.Header())
	}
	rows, err := csv.NewReader(rec.Body).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 26 || !slices.Equal(rows[0], exportColumns) || rows[1][0] != "m01" || rows[25][0] != "m25" {
		t.Errorf("export has %d rows (header %v), want the header and m01 to m25", len(rows), rows[0])
	}
	api := do(h, "GET", "/api/v1/links/export?format=csv", "", "X-Api-Key", "k3y")
	rec = browse(h, http.MethodGet, "/links/export", nil, "Cookie", ck)
	if rec.Body.String() != api.Body.String() {
		t.Error("the page's export differs from the API's")
	}
	rec = browse(h, http.MethodGet, "/links/export?format=jsonl", nil, "Cookie", ck)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/x-ndjson" || strings.Count(rec.Body.String(), "\n") != 25 {
		t.Errorf("JSON Lines export: %d %s, %d lines", rec.Code, rec.Header().Get("Content-Type"), strings.Count(rec.Body.String(), "\n"))
	}
	rec = browse(h, http.MethodGet, "/links/export?format=xml", nil, "Cookie", ck)
	checkPage(t, rec, http.StatusBadRequest)
}

// TestShortenMoreOptions: the form's tags, password and visit limit are
// the API's, checked by the same code with the same messages, each next
// to its field; the password is never written into a page.
func TestShortenMoreOptions(t *testing.T) {
	f := newFakeLinks()
	h := newPagesHandler(f)
	rec := browse(h, http.MethodPost, "/", url.Values{"url": {"https://example.com/"}, "alias": {"opts1"},
		"tags": {"Launch, q4 promo,launch"}, "password": {"open sesame"}, "max_visits": {"3"}})
	checkPage(t, rec, http.StatusCreated)
	l := f.links["opts1"]
	if !slices.Equal(l.Tags, []string{"launch", "promo", "q4"}) || l.MaxVisits != 3 || !passwordMatches(l.PasswordHash, "open sesame") {
		t.Errorf("stored tags %v, max visits %d, password hash %q", l.Tags, l.MaxVisits, l.PasswordHash)
	}
	if body := rec.Body.String(); strings.Contains(body, "open sesame") || !strings.Contains(body, "launch, promo, q4") {
		t.Errorf("the answer shows the password, or not the tags:\n%s", body)
	}
	for _, tc := range []struct {
		name   string
		form   url.Values
		field  string
		msg    string
		status int
	}{
		{"a tag with a dot", url.Values{"tags": {"ok, v1.2"}}, "tags", `tag "v1.2" must be 1 to 32`, 400},
		{"eleven tags", url.Values{"tags": {"a b c d e f g h i j k"}}, "tags", "at most 10 tags", 400},
		{"visits not a number", url.Values{"max_visits": {"lots"}}, "max_visits", "whole number", 400},
		{"visits negative", url.Values{"max_visits": {"-2"}}, "max_visits", "max_visits must be a positive whole number", 400},
		{"a password too long", url.Values{"password": {strings.Repeat("p", 129)}}, "password", "password must be 1 to 128 bytes", 400},
	} {
		tc.form.Set("url", "https://example.com/x")
		rec := browse(h, http.MethodPost, "/", tc.form)
		checkPage(t, rec, tc.status)
		doc := parseHTML(t, rec.Body.String())
		if got := textOf(byID(doc, tc.field+"-error")); !strings.Contains(got, tc.msg) {
			t.Errorf("%s: #%s-error says %q, want it to mention %q", tc.name, tc.field, got, tc.msg)
		}
		in := byID(doc, tc.field)
		if attr(in, "aria-invalid") != "true" || !strings.Contains(attr(in, "aria-describedby"), tc.field+"-error") {
			t.Errorf("%s: #%s is not marked invalid and described by its error", tc.name, tc.field)
		}
		if more := findClass(doc, "more"); !hasAttr(more, "open") {
			t.Errorf("%s: the more options are closed over their error", tc.name)
		}
		if tc.field == "password" {
			if attr(in, "value") != "" || strings.Contains(rec.Body.String(), tc.form.Get("password")) {
				t.Errorf("%s: the password is written back into the page", tc.name)
			}
			if !strings.Contains(textOf(byID(doc, "password-hint")), "Type the password again") {
				t.Errorf("%s: the form does not ask for the password again", tc.name)
			}
		} else if attr(in, "value") != tc.form.Get(tc.field) {
			t.Errorf("%s: #%s holds %q, want what was typed", tc.name, tc.field, attr(in, "value"))
		}
	}
	if f.creates != 1 {
		t.Errorf("%d links made, want 1", f.creates)
	}
}
