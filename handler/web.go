package handler

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// The web pages are server-rendered from embedded templates and assets:
// the binary is the whole site, with no front-end build. Every page works
// without JavaScript; app.js only makes some of them nicer.
//
//go:embed web/templates/*.html web/static/*
var webFS embed.FS

// pageCSP is the Content-Security-Policy of every page: scripts, styles
// and images only from this origin, no inline script or style at all, no
// framing, forms posted only here. A destination URL is attacker-chosen
// text; if an escaping bug ever let markup through, it still could not run.
const pageCSP = cspSources + "form-action 'self'; " + cspFrame

// unlockCSP is the password form's policy (page "password"): pageCSP,
// but its form may lead to any http or https URL. The right password is
// answered with the link's redirect, and browsers hold the redirects
// that follow a form's post to form-action as well: under 'self',
// Chromium refused every unlock of a link to another site (TestBrowser
// found it). The form itself still posts to /{code} here.
const unlockCSP = cspSources + "form-action 'self' https: http:; " + cspFrame

// The parts of the pages' policies.
const (
	cspSources = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
	cspFrame   = "base-uri 'none'; frame-ancestors 'none'"
)

// Cache lifetimes of the pages' answers.
const (
	assetImmutable = "public, max-age=31536000, immutable" // asset URL carries its content hash
	assetUnversion = "public, max-age=300"                 // asset asked for without (or with an old) hash
	pageShared     = "public, max-age=60"                  // the same for everyone, changes rarely
	pageFresh      = "no-cache"                            // may be stored, but revalidated (click counts move)
	pagePrivate    = "private, no-store"                   // holds a created link or a key's stats
)

// site holds the parsed page templates and the embedded assets.
type site struct {
	pages  map[string]*template.Template
	assets map[string]asset
}

// asset is one embedded static file.
type asset struct {
	body  []byte
	ctype string
	hash  string // first 12 hex digits of its SHA-256: its version in URLs
}

// pageNames are the templates under web/templates that render a whole
// page with base.html around them.
var pageNames = []string{"home", "preview", "stats", "trending", "error", "password", "links"}

// newSite parses the templates and indexes the assets; a failure is a bug
// in the embedded files, caught by any test that builds a Handler.
func newSite() (*site, error) {
	s := &site{pages: map[string]*template.Template{}, assets: map[string]asset{}}
	files, err := fs.Glob(webFS, "web/static/*")
	if err != nil {
		return nil, fmt.Errorf("list web assets: %w", err)
	}
	for _, f := range files {
		b, err := webFS.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read web asset %s: %w", f, err)
		}
		sum := sha256.Sum256(b)
		ctype := mime.TypeByExtension(path.Ext(f))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		s.assets[path.Base(f)] = asset{body: b, ctype: ctype, hash: hex.EncodeToString(sum[:])[:12]}
	}
	funcs := template.FuncMap{
		"asset": func(name string) (string, error) {
			a, ok := s.assets[name]
			if !ok {
				return "", fmt.Errorf("no web asset %q", name)
			}
			return "/static/" + name + "?v=" + a.hash, nil
		},
		"utc": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
		"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	}
	for _, name := range pageNames {
		t, err := template.New("base.html").Funcs(funcs).ParseFS(webFS, "web/templates/base.html", "web/templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parse page %s: %w", name, err)
		}
		s.pages[name] = t
	}
	return s, nil
}

// render writes page name with data, with the pages' security headers and
// the given Cache-Control. The page is rendered into a buffer first, so a
// template error is a clean 500, never half a page.
func (h *Handler) render(c echo.Context, status int, name, cache string, data any) error {
	var buf bytes.Buffer
	if err := h.site.pages[name].ExecuteTemplate(&buf, "base.html", data); err != nil {
		return fmt.Errorf("render page %s: %w", name, err)
	}
	csp := pageCSP
	if name == "password" {
		csp = unlockCSP
	}
	pageHeaders(c.Response().Header(), csp, cache)
	return c.HTMLBlob(status, buf.Bytes())
}

// pageHeaders sets what every page sends: its policy and cache lifetime.
func pageHeaders(hd http.Header, csp, cache string) {
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", cache)
}

// static serves an embedded asset. Pages link to it with its content hash
// (?v=…), which makes it cacheable for a year: a new build changes the
// URL, not the content behind it.
func (h *Handler) static(c echo.Context) error {
	a, ok := h.site.assets[c.Param("name")]
	if !ok {
		return echo.ErrNotFound
	}
	hd := c.Response().Header()
	hd.Set("Content-Type", a.ctype)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", "default-src 'none'")
	hd.Set("ETag", `"`+a.hash+`"`)
	if c.QueryParam("v") == a.hash {
		hd.Set("Cache-Control", assetImmutable)
	} else {
		hd.Set("Cache-Control", assetUnversion)
	}
	http.ServeContent(c.Response(), c.Request(), "", time.Time{}, bytes.NewReader(a.body))
	return nil
}

// pageError is what the error page shows.
type pageError struct {
	Status   int
	Title    string
	Headline string
	Detail   string
}

// htmlError reports whether an error answer should be a page rather than
// JSON: the client is a browser (it accepts text/html) and the path is not
// the API's or a machine's endpoint. Where the answer depends on Accept it
// says so (Vary), so no cache hands a browser's page to an API client.
func (h *Handler) htmlError(c echo.Context) bool {
	r := c.Request()
	// An unknown /api/ path takes the catch-all /{code} route: its
	// prefix says it is the API's all the same.
	if h.machine[c.Path()] || strings.HasPrefix(r.URL.Path, "/api/") {
		return false
	}
	c.Response().Header().Add("Vary", "Accept")
	return acceptsHTML(r.Header.Get("Accept"))
}

// acceptsHTML reports whether an Accept header names text/html with a
// non-zero quality. "*/*" alone (curl, most API clients) does not count:
// they keep getting JSON.
func acceptsHTML(accept string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		media, params, _ := strings.Cut(part, ";")
		if !strings.EqualFold(strings.TrimSpace(media), "text/html") {
			continue
		}
		for p := range strings.SplitSeq(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(k, "q") && strings.Trim(strings.TrimSpace(v), "0.") == "" {
				return false // q=0, q=0.0, q=0.000: explicitly not wanted
			}
		}
		return true
	}
	return false
}

// errorPage answers an error to a browser with a small page saying what
// happened, in the answer's own status.
func (h *Handler) errorPage(c echo.Context, out Error) error {
	p := pageError{Status: out.Status(), Title: http.StatusText(out.Status()), Headline: http.StatusText(out.Status()), Detail: out.Message}
	switch {
	case out.Code == CodeNotFound && out.Message == "no such route":
		p.Title, p.Headline, p.Detail = "Page not found", "This page does not exist", "Check the address, or start again from the home page."
	case out.Code == CodeNotFound:
		p.Title, p.Headline, p.Detail = "Link not found", "This link does not exist", "Check the address for a typo: short links are case-sensitive."
	case out.Code == CodeDisabled:
		p.Title, p.Headline, p.Detail = "Link disabled", "This link is disabled", "Its owner has turned it off for now. It may work again later."
	case out.Code == CodeGone:
		p.Title, p.Headline, p.Detail = "Link gone", "This link has expired or was removed", "Its owner deleted it, or it reached its expiry date. It will not redirect again."
	case out.Status() == http.StatusTooManyRequests:
		p.Title, p.Headline = "Too many requests", "Too many requests"
		p.Detail = "Slow down a little and try again"
		if s := c.Response().Header().Get("Retry-After"); s != "" {
			p.Detail += " in " + s + " s"
		}
		p.Detail += "."
	case out.Status() == http.StatusServiceUnavailable:
		p.Title, p.Headline, p.Detail = "Temporarily unavailable", "The shortener is temporarily unavailable", "Please try again in a moment."
	case out.Status() >= 500:
		p.Detail = "Something went wrong on our side. Please try again."
	}
	return h.render(c, out.Status(), "error", pagePrivate, p)
}
