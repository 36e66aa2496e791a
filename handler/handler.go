// Package handler is the HTTP face of the shortener: Echo v4 routes,
// request validation, and the one place where errors become HTTP answers.
//
// It declares the small interfaces it needs (Resolver, Links, IDs, Pinger)
// and knows nothing of Redis or SQL; cmd/shortener wires the real ones in.
package handler

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime/debug"
	"shortener"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
)

// openAPI describes every route; TestOpenAPICoversRoutes keeps the two
// in step.
//
//go:embed openapi.json
var openAPI []byte

// Resolver answers redirect lookups, through whatever caches it keeps.
type Resolver interface {
	Resolve(ctx context.Context, code string) (shortener.Link, error)
}

// Links reads and writes links in the source of truth.
type Links interface {
	Create(ctx context.Context, l shortener.Link) error
	Link(ctx context.Context, code string) (shortener.Link, error)
	// CreateIdempotent creates l under an idempotency key, or returns the
	// link the key already made (replayed).
	CreateIdempotent(ctx context.Context, l shortener.Link, idem shortener.Idempotency) (shortener.Link, bool, error)
	// Delete marks the link deleted and durably records that caches must
	// forget it, in one commit.
	Delete(ctx context.Context, code string, now time.Time) error
}

// Invalidator makes every cache tier forget a code after its delete was
// committed.
type Invalidator interface {
	Invalidate(ctx context.Context, code string)
}

// Warmer puts a freshly created link into the cache, best effort.
type Warmer interface {
	// Add warms a link whose code a client chose (an alias), announcing
	// it, so that instances that answered "no such code" before forget it.
	Add(ctx context.Context, l shortener.Link)
	// AddIssued warms a link whose code its create issued, which no
	// instance can have looked up before: nothing to announce.
	AddIssued(ctx context.Context, l shortener.Link)
}

// IDs issues the ID and code of a new link.
type IDs interface {
	Next() (id int64, code string)
}

// Pinger reports whether a dependency can serve.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Config is what the handler needs to know about its deployment.
type Config struct {
	BaseURL  string // prefix of short URLs, e.g. "http://127.0.0.1:8080"
	Instance string // name sent in X-Served-By, e.g. "app1"
	// AnonymousCreate lets clients without an API key create links.
	AnonymousCreate bool
	// CreateRate limits anonymous link creation per client address (per
	// second, with CreateBurst, at least 1, at once), over all instances
	// together; 0 turns the limit off. KeyCreateRate and KeyCreateBurst
	// do the same per API key.
	CreateRate     float64
	CreateBurst    int
	KeyCreateRate  float64
	KeyCreateBurst int
	// PageRate limits the previews per client address on this instance
	// (a second, with PageBurst at once); 0 turns the limit off.
	PageRate  float64
	PageBurst int
	// TrustedProxies are the peers whose X-Real-IP names the client
	// (nginx); from anyone else the peer is the client.
	TrustedProxies []netip.Prefix
	// ReferrerPolicy is sent with every redirect; PermanentMaxAge bounds
	// how long browsers may cache a 301 or 308.
	ReferrerPolicy  string
	PermanentMaxAge time.Duration
	// Policy decides which target URLs are accepted.
	Policy URLPolicy
	// IdempotencyTTL is how long an Idempotency-Key replays its first
	// answer.
	IdempotencyTTL time.Duration
	// TrendingKeyed makes GET /api/v1/trending need an API key.
	TrendingKeyed bool
	// Pages serves the web pages for people (web.go) and answers browsers'
	// errors with HTML pages; off, the handler is the API alone.
	Pages bool
	// CookieSecret signs the key cookie the pages keep (sealKey) and
	// seals list cursors (sealCursor); every instance must have the same.
	// Empty: a random one, for one instance.
	CookieSecret []byte
	// WebhookTargets says which addresses a webhook's URL may name
	// (webhook.Targets.Allows); nil: any but loopback and link-local.
	WebhookTargets func(netip.Addr) bool
}

// Deps are the collaborators the handler calls.
type Deps struct {
	Resolver    Resolver
	Links       Links
	Warmer      Warmer
	Invalidator Invalidator
	IDs         IDs
	Keys        Authorizer            // who sends an X-Api-Key; nil refuses every key
	Lister      Lister                // GET /api/v1/links; nil: not available
	Editor      Editor                // PATCH /api/v1/links/{code}; nil: 404
	BatchKeys   BatchKeys             // a batch's Idempotency-Key; nil: batches take none
	Exporter    Exporter              // GET /api/v1/links/export; nil: 404
	Importer    Importer              // POST /api/v1/links/import; nil: 404
	Clicks      Recorder              // journals redirects' clicks; nil: not counted
	Stats       Stats                 // click counts for the stats API; nil: 503
	Ready       Pinger                // readiness: can the instance serve?
	Metrics     http.Handler          // GET /metrics; nil: not served
	Registry    prometheus.Registerer // takes the HTTP metrics; nil: none
	Trending    Trender               // GET /api/v1/trending; nil: 404
	Visits      Visits                // counts visits of links with a maximum; nil: no maximum enforced
	Analytics   Analyzer              // a click's country, browser, OS, device and visitor; nil: clicks carry none
	Limiter     Limiter               // shared create limits; nil: per instance
	Webhooks    Webhooks              // /api/v1/webhooks; nil: 404
	Log         *slog.Logger
	Now         func() time.Time
}

// Handler serves the shortener's HTTP API.
type Handler struct {
	cfg    Config
	policy URLPolicy
	d      Deps
	log    *slog.Logger
	e      *echo.Echo
	// metrics count and time every request; nil without Deps.Registry.
	metrics *httpMetrics
	// reserved are the path segments no alias may take; machine the
	// routes whose errors are always JSON.
	reserved []string
	machine  map[string]bool
	site     *site // the pages' templates and assets; nil without pages
	agents   *agentCache
	// proxies are the peers whose X-Real-IP and X-Click-Id are believed.
	proxies proxies

	// Header values of every redirect, built once.
	permanentCache, referrerPolicy []string
	// servedBy is X-Served-By's value (nil: none); ids names requests.
	servedBy     []string
	ids          requestIDs
	cookieSecret []byte
	pageLimit    *localLimiter // per address, of the previews
	clientSeed   maphash.Seed  // of clientOf
	cursor       cipher.Block  // seals list cursors
	unlockLimit  *localLimiter // per address and link, of password attempts
	// hsts is Strict-Transport-Security's value when the base URL is
	// https (nil otherwise: a plain-http site cannot promise HTTPS).
	hsts []string
}

// Every answer says it is what its Content-Type says (an API error's
// JSON, a redirect's empty body), so no browser sniffs one as a page.
var nosniff = []string{"nosniff"}

// hstsValue asks browsers to use HTTPS only, for a year, once they have
// seen the site over HTTPS.
const hstsValue = "max-age=31536000"

// noStore is the Cache-Control of temporary redirects.
var noStore = []string{"private, max-age=0"}

// maxBody caps request bodies: a create is a small JSON object. nginx's
// client_max_body_size is above it, so an oversized body gets this
// handler's JSON 413, not nginx's page.
const maxBody = 8 << 10

// Validate reports every setting New cannot work with, all at once,
// each a *shortener.SettingError naming its field. The defaults live
// with the configuration (cmd/shortener), not here.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) { errs = append(errs, shortener.Invalid(field, format, a...)) }
	if c.IdempotencyTTL <= 0 {
		bad("IdempotencyTTL", "must be positive, got %s", c.IdempotencyTTL)
	}
	// A limit's burst is what a client may spend at once: while the rate
	// limits, a burst below 1 would refuse every request.
	for _, l := range []struct {
		rate, burst string
		r           float64
		b           int
	}{
		{"CreateRate", "CreateBurst", c.CreateRate, c.CreateBurst},
		{"KeyCreateRate", "KeyCreateBurst", c.KeyCreateRate, c.KeyCreateBurst},
		{"PageRate", "PageBurst", c.PageRate, c.PageBurst},
	} {
		if l.r < 0 {
			bad(l.rate, "must not be negative (0: no limit), got %g", l.r)
		} else if l.r > 0 && l.b < 1 {
			bad(l.burst, "must be at least 1 while the rate limits, got %d", l.b)
		}
	}
	if c.ReferrerPolicy == "" {
		bad("ReferrerPolicy", "is required")
	}
	// Cache-Control's max-age is in whole seconds.
	if c.PermanentMaxAge < time.Second {
		bad("PermanentMaxAge", "must be at least 1s, got %s", c.PermanentMaxAge)
	}
	return errors.Join(errs...)
}

// New returns a Handler with every route registered, or an error naming
// the settings of cfg that it cannot work with.
func New(cfg Config, d Deps) (*Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new handler: %w", err)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	h := &Handler{
		permanentCache: []string{"public, max-age=" + strconv.Itoa(int(cfg.PermanentMaxAge/time.Second))},
		referrerPolicy: []string{cfg.ReferrerPolicy},
		cfg:            cfg, policy: cfg.Policy, d: d, log: d.Log, agents: newAgentCache(), proxies: proxies(cfg.TrustedProxies)}
	if cfg.Pages {
		s, err := newSite()
		if err != nil {
			return nil, fmt.Errorf("new handler: %w", err)
		}
		h.site = s
	}
	if d.Registry != nil {
		h.metrics = newHTTPMetrics(d.Registry)
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = h.handleError
	// The real client address comes from the proxy's X-Real-IP, trusted
	// only when the peer is a configured proxy.
	e.IPExtractor = h.proxies.realIP
	h.ids.prefix = cfg.Instance + "-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
	if cfg.Instance != "" {
		h.servedBy = []string{cfg.Instance}
	}
	if strings.HasPrefix(strings.ToLower(cfg.BaseURL), "https://") {
		h.hsts = []string{hstsValue}
	}
	if h.cookieSecret = cfg.CookieSecret; len(h.cookieSecret) == 0 {
		h.cookieSecret = make([]byte, 32)
		rand.Read(h.cookieSecret) //nolint:errcheck // never fails (crypto/rand)
	}
	h.clientSeed = maphash.MakeSeed()
	h.pageLimit = newLocalLimiter(maxLocalBuckets)
	h.unlockLimit = newLocalLimiter(maxLocalBuckets)
	ck := sha256.Sum256(append([]byte("shortener: list cursor\x00"), h.cookieSecret...))
	h.cursor, _ = aes.NewCipher(ck[:16]) // a 16-byte key: no error
	e.Use(h.frame)

	rs := h.routes()
	h.reserved, h.machine = reservedSegments(rs), machinePaths(rs)
	h.register(e, rs)
	h.e = e
	return h, nil
}

// requestIDs names the requests that arrive without an X-Request-Id
// (nginx sets one on all it forwards): the instance, its start time and a
// sequence number, unique without Echo's default of 32 characters drawn
// from crypto/rand through a locked reader, which was an eighth of a
// direct redirect's time in the handler. The IDs only tie log lines to
// answers; nothing trusts them.
type requestIDs struct {
	prefix string
	n      atomic.Uint64
}

func (g *requestIDs) next() string { return g.prefix + strconv.FormatUint(g.n.Add(1), 36) }

// frame is every request's one middleware. It turns a panic into a 500
// (logged with its stack), names the request in X-Request-Id (keeping
// the one nginx sets) and the instance in X-Served-By, so a client behind
// the load balancer can tell the instances apart. It stands in for Echo's
// Recover and RequestID: Echo wraps the route in every middleware anew on
// each request, a closure each, and Header.Set canonicalizes names this
// already has canonical (BenchmarkRedirectL1Hit: 4.8-5.9 µs and 15
// allocations with them, 4.0-4.2 µs and 12 with this).
func (h *Handler) frame(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			r := recover()
			if r == nil {
				return
			}
			if r == http.ErrAbortHandler { // net/http's way to abort a response
				panic(r)
			}
			h.log.Error("panic", "panic", r, "path", c.Request().URL.Path, "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", r)
		}()
		hd := c.Response().Header()
		if rid := c.Request().Header[echo.HeaderXRequestID]; len(rid) > 0 && rid[0] != "" {
			hd[echo.HeaderXRequestID] = rid[:1:1]
		} else {
			hd[echo.HeaderXRequestID] = []string{h.ids.next()}
		}
		if h.servedBy != nil {
			hd["X-Served-By"] = h.servedBy
		}
		hd["X-Content-Type-Options"] = nosniff
		if h.hsts != nil {
			hd["Strict-Transport-Security"] = h.hsts
		}
		return next(c)
	}
}

// ServeHTTP makes Handler an http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.metrics != nil {
		h.metrics.serve(h.e, w, r)
		return
	}
	h.e.ServeHTTP(w, r)
}

func (h *Handler) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 when the instance can serve: MySQL answers. A Redis
// outage degrades lookups but does not make the instance unready, so it
// is not checked here.
func (h *Handler) readyz(c echo.Context) error {
	if h.d.Ready != nil {
		if err := h.d.Ready.Ping(c.Request().Context()); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

// redirect answers GET and HEAD /{code}.
func (h *Handler) redirect(c echo.Context) error {
	code := c.Param("code")
	if !plausibleCode(code) {
		// Not a code: the preview /{code}+ is looked for only here, so a
		// redirect pays nothing for it.
		if pc, ok := strings.CutSuffix(code, "+"); ok && h.site != nil && plausibleCode(pc) {
			setOp(c, opPage)
			return h.preview(c, pc)
		}
		// Echo gives this route every path no other takes (its last
		// parameter matches slashes too): such a path is no redirect.
		setOp(c, defaultOp(c.Request()))
		return shortener.ErrNotFound
	}
	l, now, err := h.live(c.Request().Context(), code)
	switch {
	case err != nil:
		return err
	case l.PasswordHash != "":
		return h.locked(c, l, "")
	}
	return h.follow(c, l, now)
}

// live resolves code to a link that may be followed now: errGone for an
// expired or deleted link, errDisabled for one its owner turned off. The
// redirect, the preview and the password form all ask it.
func (h *Handler) live(ctx context.Context, code string) (shortener.Link, time.Time, error) {
	l, err := h.d.Resolver.Resolve(ctx, code)
	if err != nil {
		return shortener.Link{}, time.Time{}, err
	}
	now := h.d.Now()
	switch {
	case l.Gone(now):
		return shortener.Link{}, now, errGone
	case l.Disabled:
		return shortener.Link{}, now, errDisabled
	}
	return l, now, nil
}

// follow answers l's redirect and counts the click (redirect, and unlock
// once a link's password is right).
func (h *Handler) follow(c echo.Context, l shortener.Link, now time.Time) error {
	// A link with a maximum spends a visit on every redirect but HEAD's
	// (which is no visit, and so may still show where an ended link went).
	if l.MaxVisits > 0 && h.d.Visits != nil && c.Request().Method != http.MethodHead {
		if err := h.d.Visits.Take(c.Request().Context(), l); err != nil {
			return err
		}
	}
	// Redirects are not cached by browsers or proxies unless the link
	// itself asked for a permanent redirect: a cached 302 would hide
	// later deletes and every click after the first. A permanent one is
	// cached for a bounded time only, so a deleted or expired link does
	// not live on in browsers for ever. The values are built once in New:
	// this is the hot path.
	hd := c.Response().Header()
	if l.Redirect != http.StatusMovedPermanently && l.Redirect != http.StatusPermanentRedirect {
		hd["Cache-Control"] = noStore
	} else {
		hd["Cache-Control"] = h.permanentCache
	}
	hd["Referrer-Policy"] = h.referrerPolicy
	status := l.Redirect
	if status == 0 {
		status = http.StatusFound
	}
	// A GET answered 3xx is one click, as is a password form's POST (a
	// HEAD is not: nobody followed the link). It is journaled before the
	// answer is written, so a client that got the redirect had its click
	// kept, even if this process is killed the next instant.
	if h.d.Clicks != nil && c.Request().Method != http.MethodHead {
		r := c.Request()
		viaProxy := h.proxies.trusts(r) // the peer parsed once per click
		addr, ua := clientAddr(r, viaProxy), r.Header.Get("User-Agent")
		agent := h.agents.class(ua)
		dims, analyzed := h.dimsOf(addr, ua, agent == shortener.AgentBot, now)
		h.d.Clicks.Record(shortener.Click{
			LinkID: l.ID, Code: l.Code, At: now.UTC(),
			Referrer: referrerHost(r.Header.Get("Referer")),
			Agent:    agent,
			Request:  h.clickRequest(r, viaProxy),
			Client:   h.clientOf(addr, ua),
			Analyzed: analyzed,
			Dims:     dims,
		})
	}
	hd[echo.HeaderLocation] = []string{l.URL} // canonical already: Set would canonicalize it again
	return c.NoContent(status)
}

// plausibleCode rejects paths that cannot be a code before any lookup, so
// junk never reaches the caches or the database.
func plausibleCode(code string) bool {
	if code == "" || len(code) > 64 {
		return false
	}
	for i := 0; i < len(code); i++ {
		b := code[i]
		if !('0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || b == '-' || b == '_') {
			return false
		}
	}
	return true
}

// clickRequest is the request a click names: nginx's X-Click-Id, believed
// only from a trusted proxy (nginx overwrites a client's). A client that
// reaches the app directly and names a request of its own could replay
// another's ID to have it not counted, or claim a time in the far future
// (the journal clamps those; see clicks.Journal.Record).
func (h *Handler) clickRequest(r *http.Request, viaProxy bool) shortener.ClickRequest {
	vs := r.Header[clickIDHeader]
	if len(vs) == 0 || !viaProxy {
		return shortener.ClickRequest{}
	}
	return clickRequest(vs)
}

// clientAddr is the client's address: the proxy's X-Real-IP when the
// peer is a trusted proxy, else the peer's, without its port.
func clientAddr(r *http.Request, viaProxy bool) string {
	if viaProxy {
		if ip := r.Header.Get("X-Real-IP"); ip != "" {
			return ip
		}
	}
	addr := r.RemoteAddr
	if i := strings.LastIndexByte(addr, ':'); i > 0 {
		addr = addr[:i]
	}
	return addr
}

// dimsOf derives a click's analytics dimensions from the client's address
// (clientAddr's) and agent (bot is the agent's class): false when
// analytics are off.
func (h *Handler) dimsOf(ip, ua string, bot bool, at time.Time) (shortener.ClickDims, bool) {
	if h.d.Analytics == nil {
		return shortener.ClickDims{}, false
	}
	if len(ip) > 1 && ip[0] == '[' && ip[len(ip)-1] == ']' { // an IPv6 peer
		ip = ip[1 : len(ip)-1]
	}
	addr, _ := netip.ParseAddr(ip) // invalid: the zero Addr, an unknown country
	d := h.d.Analytics.Enrich(addr.Unmap(), ua, bot, at)
	return shortener.ClickDims{Country: d.Country, Browser: uint8(d.Agent.Browser), OS: uint8(d.Agent.OS),
		Device: uint8(d.Agent.Device), Visitor: d.Visitor}, true
}

// clientOf is the click's Client: a hash of the client's address
// (clientAddr's) and its agent, under this process's random seed. Never 0.
func (h *Handler) clientOf(addr, ua string) uint64 {
	var m maphash.Hash // on the stack: no allocation per redirect
	m.SetSeed(h.clientSeed)
	m.WriteString(addr)
	m.WriteByte(0)
	m.WriteString(ua)
	return m.Sum64() | 1
}
