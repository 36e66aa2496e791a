package handler

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
)

// route is one entry of the route table. Every path the handler serves
// is in routes, and what else must know the paths derives from it:
// registration (New), the first path segments an alias may not take
// (reservedSegments), the HTTP metrics' op label, and the check that
// openapi.json documents exactly the API's routes (TestOpenAPICoversRoutes).
type route struct {
	method, path string // the path in Echo's syntax
	op           op     // the shortener_http_* metrics' op label
	kind         kind
	serve        echo.HandlerFunc
	mw           []echo.MiddlewareFunc
	off          bool // not served with this configuration
}

// kind says where a route is documented.
type kind uint8

const (
	kindAPI  kind = iota // in openapi.json
	kindPage             // a page for people (Config.Pages), not in openapi.json
)

// routes is the route table for h's configuration.
func (h *Handler) routes() []route {
	keyed := []echo.MiddlewareFunc{h.identify, h.requireKey}
	// identify runs per route, not on a group: a group middleware would
	// make Echo answer unknown /api/v1 paths itself.
	var limit []echo.MiddlewareFunc // the create limit, shared by the API and the web form
	if h.cfg.CreateRate > 0 || h.cfg.KeyCreateRate > 0 {
		limit = append(limit, h.createLimit())
	}
	create := []echo.MiddlewareFunc{h.identify}
	if !h.cfg.AnonymousCreate {
		create = append(create, h.requireKey)
	}
	create = append(create, limit...)
	var trending []echo.MiddlewareFunc // public unless the configuration asks for a key
	if h.cfg.TrendingKeyed {
		trending = keyed
	}
	const get, head, post, del, patch = http.MethodGet, http.MethodHead, http.MethodPost, http.MethodDelete, http.MethodPatch
	noPages := !h.cfg.Pages
	return []route{
		{get, "/healthz", opProbe, kindAPI, h.healthz, nil, false},
		{get, "/readyz", opProbe, kindAPI, h.readyz, nil, false},
		{get, "/openapi.json", opPage, kindAPI, h.openapi, nil, false},
		{get, "/metrics", opMetrics, kindAPI, h.metricsPage, nil, h.d.Metrics == nil},

		{post, "/api/v1/links", opCreate, kindAPI, h.create, create, false},
		{get, "/api/v1/links", opAPI, kindAPI, h.list, keyed, false},
		{post, "/api/v1/links/batch", opAPI, kindAPI, h.batchCreate(), keyed, false},
		{get, "/api/v1/links/export", opAPI, kindAPI, h.export, keyed, false},
		{post, "/api/v1/links/import", opAPI, kindAPI, h.importLinks(), keyed, false},
		{get, "/api/v1/links/:code", opAPI, kindAPI, h.show, keyed, false},
		{patch, "/api/v1/links/:code", opAPI, kindAPI, h.edit, keyed, false},
		{del, "/api/v1/links/:code", opAPI, kindAPI, h.remove, keyed, false},
		{get, "/api/v1/links/:code/stats", opAPI, kindAPI, h.stats, keyed, false},
		{get, "/api/v1/trending", opAPI, kindAPI, h.trending, trending, false},
		{post, "/api/v1/webhooks", opAPI, kindAPI, h.createWebhook, keyed, false},
		{get, "/api/v1/webhooks", opAPI, kindAPI, h.listWebhooks, keyed, false},
		{del, "/api/v1/webhooks/:id", opAPI, kindAPI, h.deleteWebhook, keyed, false},

		// The pages add no work to the redirect path: GET /{code} keeps
		// its route and handler, and the preview /{code}+ is reached from
		// it only once a path is known not to be a code (see redirect).
		{get, "/", opPage, kindPage, h.home, nil, noPages},
		{post, "/", opPage, kindPage, h.shorten, limit, noPages},
		{get, "/static/:name", opPage, kindPage, h.static, nil, noPages},
		{get, "/qr/:code", opPage, kindPage, h.qr, nil, noPages},
		{get, "/trending", opPage, kindPage, h.trendingPage, nil, noPages},
		{get, "/stats/:code", opPage, kindPage, h.statsPage, nil, noPages},
		{post, "/settings/key", opPage, kindPage, h.saveKey, nil, noPages},
		{get, "/links", opPage, kindPage, h.links, nil, noPages},              // My links (weblinks.go)
		{get, "/links/export", opPage, kindPage, h.linksExport, nil, noPages}, // its download
		{post, "/links/:code", opPage, kindPage, h.manage, nil, noPages},      // its forms
		{post, "/:code", opRedirect, kindPage, h.unlock, nil, noPages},        // a password-protected link's form

		{get, "/:code", opRedirect, kindAPI, h.redirect, nil, false},
		{head, "/:code", opRedirect, kindAPI, h.redirect, nil, false},
	}
}

// register adds the served routes of rs to e, each naming its op to
// the HTTP metrics when they are kept.
func (h *Handler) register(e *echo.Echo, rs []route) {
	for _, r := range rs {
		if r.off {
			continue
		}
		serve := r.serve
		if h.metrics != nil {
			serve = withOp(r.op, serve)
		}
		e.Add(r.method, r.path, serve, r.mw...)
	}
}

// machinePaths are the paths (Echo's syntax) of the routes answered to
// programs, not people: the API's and the operational endpoints. Their
// errors are JSON whatever the client accepts (htmlError); a redirect's
// and a page's may be a page.
func machinePaths(rs []route) map[string]bool {
	out := map[string]bool{}
	for _, r := range rs {
		if r.kind == kindAPI && r.op != opRedirect {
			out[r.path] = true
		}
	}
	return out
}

// notServed are first path segments nginx answers itself, or that
// browsers ask every site for: no alias may take them either.
var notServed = []string{"favicon.ico", "robots.txt"}

// reservedSegments are the static segments of every route's path in rs,
// served with this configuration or not (a configuration can change;
// an alias is for ever), with notServed: an alias may take none of them,
// in any letter case. Not only first segments: /api/v1/links/export is
// a route beside /api/v1/links/{code}, and a link aliased "export" could
// not be read there.
func reservedSegments(rs []route) []string {
	out := append([]string(nil), notServed...)
	for _, r := range rs {
		for _, seg := range strings.Split(strings.Trim(r.path, "/"), "/") {
			if seg == "" || strings.HasPrefix(seg, ":") || slices.ContainsFunc(out, func(s string) bool { return strings.EqualFold(s, seg) }) {
				continue
			}
			out = append(out, seg)
		}
	}
	return out
}

func (h *Handler) openapi(c echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, openAPI)
}

func (h *Handler) metricsPage(c echo.Context) error {
	h.d.Metrics.ServeHTTP(c.Response(), c.Request())
	return nil
}
