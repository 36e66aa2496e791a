package handler

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"math"
	"net/http"
	"net/url"
	"shortener"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// keyCookieName names the cookie that says which API key a browser
// entered on a page. It never holds the key itself, which would work
// against the API from wherever the cookie leaked to: it holds the key's
// hash and an expiry, signed by the server (sealKey), so it is good for
// these pages only, for keyCookieDays at most. It is HttpOnly (no script,
// ours or injected, can read it), SameSite=Lax and sent only to this
// site; Secure when the site is https, and on a plain-http site kept only
// for the browser's session. The key is checked on every use, so a
// revoked key stops working at once.
const keyCookieName = "shortener_key"

// keyCookieDays is how long a browser keeps its key.
const keyCookieDays = 30

// sealKey is the cookie value for a key's hash until exp:
// "v1.<hash>.<exp unix>.<HMAC-SHA256 of the rest, base64url>".
func (h *Handler) sealKey(hash string, exp time.Time) string {
	v := "v1." + hash + "." + strconv.FormatInt(exp.Unix(), 10)
	return v + "." + h.cookieMAC(v)
}

func (h *Handler) cookieMAC(v string) string {
	m := hmac.New(sha256.New, h.cookieSecret)
	m.Write([]byte(v))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// openKey returns the key hash a cookie value holds, if it is one this
// site sealed and it has not expired.
func (h *Handler) openKey(v string) (string, bool) {
	i := strings.LastIndexByte(v, '.')
	if i < 0 || !hmac.Equal([]byte(v[i+1:]), []byte(h.cookieMAC(v[:i]))) {
		return "", false
	}
	parts := strings.Split(v[:i], ".")
	if len(parts) != 3 || parts[0] != "v1" {
		return "", false
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || !h.d.Now().Before(time.Unix(exp, 0)) {
		return "", false
	}
	return parts[1], true
}

// keyCookie returns the key hash the browser keeps, "" if none (or one
// this site did not seal, or expired: the browser is asked for its key
// again).
func (h *Handler) keyCookie(c echo.Context) string {
	ck, err := c.Cookie(keyCookieName)
	if err != nil {
		return ""
	}
	hash, _ := h.openKey(ck.Value)
	return hash
}

// cookieCaller identifies the browser by the API key it keeps: anonymous
// without one, ErrUnknownKey for a key revoked since it was entered.
func (h *Handler) cookieCaller(c echo.Context) (shortener.Caller, error) {
	hash := h.keyCookie(c)
	if hash == "" {
		return shortener.Caller{}, nil
	}
	if h.d.Keys == nil {
		return shortener.Caller{}, ErrUnknownKey
	}
	return h.d.Keys.IdentifyHash(c.Request().Context(), hash)
}

// pageCaller is who the API key kept in this browser belongs to, for a
// page only a key's owner may see. needKey says the page must ask for
// the key instead, with keyError saying why when it was refused (a key
// revoked since it was kept); err is a key that could not be checked.
func (h *Handler) pageCaller(c echo.Context) (caller shortener.Caller, needKey bool, keyError string, err error) {
	caller, err = h.cookieCaller(c)
	switch {
	case errors.Is(err, ErrUnknownKey):
		return caller, true, "the key kept in this browser is not valid any more; enter another", nil
	case err != nil:
		return caller, false, "", err
	}
	return caller, !caller.Keyed(), "", nil
}

// hostOf returns the host of an absolute URL, "" if it has none.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}

// previewPage is GET /{code}+.
type previewPage struct {
	Title string
	Link  linkView
}

// preview answers GET /{code}+: where the link goes, with a button to go.
// Reached from redirect only for paths that are not codes, so it costs
// the redirect nothing. Anyone may ask, so it answers from the lookup path
// a redirect takes (L1, Redis, and MySQL only on a miss, one query per
// code at a time, unknown codes cached as such), never with a MySQL query
// of its own per request: a flood of previews must not starve the
// database that creates and cold redirects need. Hence no creation date
// and no click count, which only MySQL has; the count is the owner's, on
// the stats page. Unknown, expired and deleted links get the same error
// pages as the redirect.
func (h *Handler) preview(c echo.Context, code string) error {
	if h.cfg.PageRate > 0 {
		if ok, wait := h.pageLimit.allow("addr:"+clientKey(c.RealIP()), h.cfg.PageRate, h.cfg.PageBurst); !ok {
			retry := strconv.Itoa(max(1, int(math.Ceil(wait.Seconds()))))
			c.Response().Header().Set("Retry-After", retry)
			return &Error{Code: CodeRateLimited, Message: "too many previews from this address; retry after " + retry + " s"}
		}
	}
	l, _, err := h.live(c.Request().Context(), code)
	switch {
	case err != nil:
		return err
	case l.PasswordHash != "":
		return h.locked(c, l, "") // the preview of a locked link is its form: no destination
	}
	return h.render(c, http.StatusOK, "preview", pageFresh, previewPage{Title: "Where " + code + " goes", Link: h.view(l)})
}

// statsPage is GET /stats/{code}.
type statsPage struct {
	Title    string
	Code     string
	Link     *linkView
	NeedKey  bool   // no key kept, or it was refused: show the key form
	KeyError string // why the key was refused
	HasKey   bool
	NotYours bool   // the key kept does not manage this link
	Interval string // "hour" (the last 48 hours) or "day" (the last 30 days)
	Stats    *statsView
	Note     string // why there are no stats to show
}

// statsView is a link's clicks as the stats page shows them.
type statsView struct {
	Total     int64
	Interval  string
	Chart     chartSVG
	Series    []point
	Referrers []share
	Agents    []share
	Visitors  int64
	Dims      []dimView
	AsOf      time.Time
}

// dimView is one analytics dimension's table on the stats page.
type dimView struct {
	ID, Title, Column string
	Rows              []share
}

// point is one bar of the clicks chart.
type point struct {
	At     time.Time
	Clicks int64
}

// share is a named count with its part of the whole.
type share struct {
	Name    string
	Clicks  int64
	Percent int
}

// statsPage answers GET /stats/{code} for a link's owner: the clicks over
// time, the top referrer hosts and the browser/bot split, rendered on the
// server (the chart is SVG), with the API key kept in an HttpOnly cookie.
func (h *Handler) statsPage(c echo.Context) error {
	code := c.Param("code")
	if !plausibleCode(code) {
		return shortener.ErrNotFound
	}
	p := statsPage{Title: "Stats of " + code, Code: code, Interval: c.QueryParam("interval")}
	switch p.Interval {
	case "":
		p.Interval = "hour"
	case "hour", "day":
	default:
		return &Error{Code: CodeInvalidRequest, Message: "interval must be hour or day"}
	}
	p.HasKey = h.keyCookie(c) != ""
	caller, needKey, keyError, err := h.pageCaller(c)
	switch {
	case err != nil:
		return err
	case needKey:
		p.NeedKey, p.KeyError = true, keyError
		return h.render(c, http.StatusOK, "stats", pagePrivate, p)
	}
	l, err := h.d.Links.Link(c.Request().Context(), code)
	if err != nil {
		return err
	}
	if !caller.Manages(l) {
		p.NotYours = true
		return h.render(c, http.StatusForbidden, "stats", pagePrivate, p)
	}
	v := h.view(l)
	p.Link = &v
	p.Stats, p.Note = h.linkStats(c, l, p.Interval)
	return h.render(c, http.StatusOK, "stats", pagePrivate, p)
}

// saveKey answers POST /settings/key: keep the API key typed into a page
// in this browser (action "save") or forget it ("forget"), then go back
// to the page the form was on (303, so a reload does not post twice).
func (h *Handler) saveKey(c echo.Context) error {
	r := c.Request()
	if err := readForm(c, maxBody); err != nil {
		return err
	}
	next := localPath(r.PostForm.Get("next"))
	ck := &http.Cookie{Name: keyCookieName, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: strings.HasPrefix(h.cfg.BaseURL, "https:")}
	if r.PostForm.Get("action") == "forget" {
		ck.MaxAge = -1
		c.SetCookie(ck)
		return c.Redirect(http.StatusSeeOther, next)
	}
	key := strings.TrimSpace(r.PostForm.Get("key"))
	err := error(ErrUnknownKey) // an empty key is not a key
	var caller shortener.Caller
	if key != "" && h.d.Keys != nil {
		caller, err = h.d.Keys.Identify(r.Context(), key)
	}
	if err != nil && !errors.Is(err, ErrUnknownKey) {
		return err
	}
	if err != nil {
		msg := "this API key is not valid"
		if key == "" {
			msg = "enter your API key"
		}
		if code, ok := strings.CutPrefix(next, "/stats/"); ok && plausibleCode(code) {
			p := statsPage{Title: "Stats of " + code, Code: code, NeedKey: true, KeyError: msg}
			return h.render(c, http.StatusUnauthorized, "stats", pagePrivate, p)
		}
		if next == "/links" {
			return h.render(c, http.StatusUnauthorized, "links", pagePrivate, linksPage{Title: myLinksTitle, NeedKey: true, KeyError: msg})
		}
		p := h.newHomePage(c)
		p.KeyError = msg
		return h.render(c, http.StatusUnauthorized, "home", pagePrivate, p)
	}
	exp := h.d.Now().Add(keyCookieDays * 24 * time.Hour)
	ck.Value = h.sealKey(caller.Owner, exp)
	if ck.Secure {
		ck.MaxAge = keyCookieDays * 24 * 3600
	} // plain http: a session cookie, gone when the browser closes
	c.SetCookie(ck)
	return c.Redirect(http.StatusSeeOther, next)
}

// localPath returns p if it is a path on this site, "/" otherwise: the
// key form's way back must not lead elsewhere. "//evil.example" is a
// host, and browsers drop tabs and newlines from a URL and read a
// backslash as a slash, so "/\t/evil.example" and "/\\evil.example" are
// too: any control character, space or backslash refuses the path.
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") {
		return "/"
	}
	for i := 0; i < len(p); i++ {
		if b := p[i]; b <= ' ' || b == 0x7f || b == '\\' {
			return "/"
		}
	}
	if u, err := url.Parse(p); err != nil || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return p
}

// trendingPage is GET /trending.
type trendingPage struct {
	Title   string
	Window  string
	Windows []string
	Items   []trendItem
	Source  string
	AsOf    time.Time
	Note    string // why there is no list to show
}

// trendItem is one row of the trending list.
type trendItem struct {
	Rank     int
	Code     string
	ShortURL string
	URL      string
	Host     string
	Clicks   int64
}

// trendWindows are the windows the trending API knows.
var trendWindows = []string{"5m", "1h", "24h"}

// trendLimit is how many links the trending page lists.
const trendLimit = 20

// trendingPage answers GET /trending?window=5m|1h|24h: the most followed
// links, rendered on the server; app.js refreshes the list in place from
// the trending API without reloading the page.
func (h *Handler) trendingPage(c echo.Context) error {
	w := c.QueryParam("window")
	if w == "" {
		w = "1h"
	}
	valid := false
	for _, tw := range trendWindows {
		valid = valid || w == tw
	}
	if !valid {
		return &Error{Code: CodeInvalidRequest, Message: "window must be 5m, 1h or 24h"}
	}
	p := trendingPage{Title: "Trending links", Window: w, Windows: trendWindows}
	switch {
	case h.d.Trending == nil:
		p.Note = "Trending is not available on this server."
	case h.cfg.TrendingKeyed:
		// The API wants a key; the page will not show what the API hides.
		p.Note = "Trending is private on this server: ask its API with your key."
	default:
		t, err := h.d.Trending.Top(w, trendLimit)
		if err != nil {
			return err
		}
		p.Source, p.AsOf = t.Source, t.AsOf
		for i, tr := range t.Links {
			v := h.view(tr.Link)
			p.Items = append(p.Items, trendItem{Rank: i + 1, Code: v.Code, ShortURL: v.ShortURL, URL: v.URL, Host: v.Host, Clicks: tr.Clicks})
		}
	}
	return h.render(c, http.StatusOK, "trending", pageFresh, p)
}
