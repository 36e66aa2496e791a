package handler

import (
	"net/http"
	"net/url"
	"shortener"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// xssURL is a destination the URL policy accepts (markup is legal in a
// query) that would run script on any page that printed it unescaped.
const xssURL = `https://example.com/?q='"><script>alert(1)</script><img/src=x/onerror=alert(2)><svg/onload=alert(3)>`

// xssAlias is an alias full of markup: refused, but echoed back in the
// form with its error.
const xssAlias = `"><script>alert(4)</script><b onmouseover=alert(5)>x`

// TestPagesEscapeMarkup renders every page with a destination and an
// alias full of markup and checks, on the parsed HTML, that no script,
// event handler or foreign element came of it, and that the markup is
// shown as text.
func TestPagesEscapeMarkup(t *testing.T) {
	f := newFakeLinks()
	h := newPagesHandler(f)
	// Codes are checked before they are stored; the trending page must not
	// rely on it.
	h.d.Trending = markupTrender{shortener.Link{Code: `t"><b onclick=alert(6)>`, URL: xssURL}}
	created := browse(h, http.MethodPost, "/", url.Values{"url": {xssURL}, "alias": {"xss-link"}})
	refused := browse(h, http.MethodPost, "/", url.Values{"url": {xssURL}, "alias": {xssAlias}})
	if created.Code != http.StatusCreated || refused.Code != http.StatusBadRequest {
		t.Fatalf("create: %d, refused alias: %d", created.Code, refused.Code)
	}
	key := &http.Cookie{Name: keyCookieName, Value: h.sealKey(HashKey("adm1n"), now.Add(time.Hour))} // an admin key manages anonymous links
	// My links lists a key's own links: one made with the key kept, and
	// an edit refused with markup typed as its destination.
	h.d.Lister, h.d.Editor = f, f
	mine := &http.Cookie{Name: keyCookieName, Value: h.sealKey(HashKey("k3y"), now.Add(time.Hour))}
	if rec := browse(h, http.MethodPost, "/", url.Values{"url": {xssURL}, "alias": {"xss-mine"}}, "Cookie", mine.String()); rec.Code != http.StatusCreated {
		t.Fatalf("create with the key kept: %d", rec.Code)
	}
	pages := map[string]string{
		"POST / (created)":       created.Body.String(),
		"POST / (alias refused)": refused.Body.String(),
		"GET /xss-link+":         browse(h, http.MethodGet, "/xss-link+", nil).Body.String(),
		"GET /stats/xss-link":    browse(h, http.MethodGet, "/stats/xss-link", nil, "Cookie", key.String()).Body.String(),
		"GET /trending":          browse(h, http.MethodGet, "/trending", nil).Body.String(),
		"GET /links":             browse(h, http.MethodGet, "/links?q="+url.QueryEscape(xssAlias), nil, "Cookie", mine.String()).Body.String(),
		"GET /links (all)":       browse(h, http.MethodGet, "/links", nil, "Cookie", mine.String()).Body.String(),
		"POST /links/xss-mine (refused)": browse(h, http.MethodPost, "/links/xss-mine",
			url.Values{"action": {"edit"}, "url": {"javascript:" + xssAlias}}, "Cookie", mine.String()).Body.String(),
	}
	for name, body := range pages {
		checkNoInjection(t, name, body)
	}
	if !strings.Contains(textAndValues(parseHTML(t, pages["GET /links"])), xssAlias) {
		t.Error("My links does not give the typed search back as text")
	}
	if !strings.Contains(textAndValues(parseHTML(t, pages["POST /links/xss-mine (refused)"])), "javascript:"+xssAlias) {
		t.Error("My links does not give the refused destination back as text")
	}
	for _, name := range []string{"POST / (created)", "GET /xss-link+", "GET /stats/xss-link", "GET /trending", "GET /links (all)"} {
		if name == "GET /trending" { // shows the host and code, not the whole URL
			if !strings.Contains(textAndValues(parseHTML(t, pages[name])), `t"><b onclick=alert(6)>`) {
				t.Errorf("%s does not show the code as text", name)
			}
			continue
		}
		if !strings.Contains(textAndValues(parseHTML(t, pages[name])), xssURL) {
			t.Errorf("%s does not show the destination as text", name)
		}
	}
	if !strings.Contains(textAndValues(parseHTML(t, pages["POST / (alias refused)"])), xssAlias) {
		t.Errorf("the refused form does not give the typed alias back as text")
	}
}

// markupTrender ranks one link first.
type markupTrender struct{ l shortener.Link }

func (m markupTrender) Top(window string, _ int) (shortener.Trending, error) {
	return shortener.Trending{Source: "redis", Links: []shortener.Trend{{Link: m.l, Clicks: 3}}}, nil
}

// checkNoInjection fails if the page holds any script but ours, any event
// handler attribute, or an element that only markup from data could make.
func checkNoInjection(t *testing.T, name, body string) {
	t.Helper()
	doc := parseHTML(t, body)
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			for _, a := range n.Attr {
				if strings.HasPrefix(strings.ToLower(a.Key), "on") {
					t.Errorf("%s: <%s %s=%q>: an event handler", name, n.Data, a.Key, a.Val)
				}
			}
			switch n.Data {
			case "script":
				if !strings.HasPrefix(attr(n, "src"), "/static/app.js?v=") || n.FirstChild != nil {
					t.Errorf("%s: a script that is not ours: src=%q", name, attr(n, "src"))
				}
			case "img":
				if !strings.HasPrefix(attr(n, "src"), "/qr/") {
					t.Errorf("%s: an image that is not our QR code: src=%q", name, attr(n, "src"))
				}
			case "b", "iframe", "object", "embed":
				t.Errorf("%s: a <%s> element, which no template writes", name, n.Data)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
}

// textAndValues is every text node and attribute value of the page: where
// escaped data ends up once a browser has parsed it.
func textAndValues(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for _, a := range n.Attr {
			b.WriteString("\n" + a.Val + "\n")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}
