package handler

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"shortener"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// homePage is what GET / and POST / render: the form, with what was typed
// and the errors next to their fields, and the link made, if any.
type homePage struct {
	Title    string
	Form     shortenForm
	Errors   map[string]string // field name -> message; "" is the whole form
	Result   *linkView
	Anon     bool // anonymous creates are allowed
	Redirs   []redirectChoice
	HasKey   bool   // an API key is kept in this browser (cookie)
	KeyError string // why the key typed into the key form was refused
	BaseURL  string
}

// shortenForm is the form's fields as typed.
type shortenForm struct {
	URL, Alias, Expires, Redirect string
	Tags, MaxVisits               string
	// Password is never written back into the page; HadPassword says one
	// was typed, so a form sent back with errors asks for it again.
	Password    string
	HadPassword bool
	Idem        string // the form's Idempotency-Key: a resubmit replays, never duplicates
}

// redirectChoice is one option of the redirect select.
type redirectChoice struct {
	Value, Label string
}

var redirectChoices = []redirectChoice{
	{"302", "302 Found: temporary (default; every click is counted)"},
	{"307", "307 Temporary Redirect: temporary, keeps the method"},
	{"301", "301 Moved Permanently: browsers cache it"},
	{"308", "308 Permanent Redirect: cached, keeps the method"},
}

// linkView is a link as the pages show it.
type linkView struct {
	Code      string
	ShortURL  string
	URL       string
	Host      string // the destination's host, shown on its own so it cannot hide
	Redirect  int
	CreatedAt time.Time
	ExpiresAt time.Time
	// What its owner set besides (the owner's pages show them; the
	// preview never renders a locked or disabled link at all).
	Tags      []string
	Disabled  bool
	Protected bool // it has a password
	MaxVisits int64
}

func (h *Handler) view(l shortener.Link) linkView {
	v := linkView{Code: l.Code, ShortURL: h.response(l).ShortURL, URL: l.URL, Redirect: l.Redirect,
		CreatedAt: l.CreatedAt, ExpiresAt: l.ExpiresAt,
		Tags: l.Tags, Disabled: l.Disabled, Protected: l.PasswordHash != "", MaxVisits: l.MaxVisits}
	v.Host = hostOf(l.URL)
	return v
}

// home answers GET /: an empty form.
func (h *Handler) home(c echo.Context) error {
	p := h.newHomePage(c)
	return h.render(c, http.StatusOK, "home", pagePrivate, p)
}

func (h *Handler) newHomePage(c echo.Context) homePage {
	return homePage{Title: "Shorten a link", Form: shortenForm{Redirect: "302", Idem: newFormKey()},
		Errors: map[string]string{}, Anon: h.cfg.AnonymousCreate, Redirs: redirectChoices,
		HasKey: h.keyCookie(c) != "", BaseURL: h.cfg.BaseURL}
}

// readForm reads a form a page posted, of at most limit bytes: refused
// when it comes from another site (every form here changes something,
// and a browser would send the key cookie with it), 413 when too large,
// 400 when it cannot be parsed. r.PostForm holds it after.
func readForm(c echo.Context, limit int64) error {
	r := c.Request()
	if err := http.NewCrossOriginProtection().Check(r); err != nil {
		return &Error{Code: CodeCrossOrigin, Message: "cross-origin form posts are refused"}
	}
	r.Body = http.MaxBytesReader(c.Response(), r.Body, limit)
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return &Error{Code: CodeInvalidRequest, Message: "the form could not be read"}
	}
	return nil
}

// newFormKey returns a fresh Idempotency-Key for one rendering of the
// form: a double click or a reload of the answer replays the first
// create instead of making a second link.
func newFormKey() string {
	var b [16]byte
	rand.Read(b[:]) //nolint:errcheck // crypto/rand.Read never fails
	return "web-" + hex.EncodeToString(b[:])
}

// shorten answers POST /, the form posted without JavaScript (or by
// app.js, which swaps in the page's <main>): the same validation and
// insert as the API's create, answered with a page. Errors the user can
// fix are shown next to their field; the rest are the error page.
func (h *Handler) shorten(c echo.Context) error {
	r := c.Request()
	if err := readForm(c, maxBody); err != nil {
		return err
	}
	p := h.newHomePage(c)
	f := shortenForm{
		URL:       strings.TrimSpace(r.PostForm.Get("url")),
		Alias:     strings.TrimSpace(r.PostForm.Get("alias")),
		Expires:   strings.TrimSpace(r.PostForm.Get("expires")),
		Redirect:  r.PostForm.Get("redirect"),
		Tags:      strings.TrimSpace(r.PostForm.Get("tags")),
		MaxVisits: strings.TrimSpace(r.PostForm.Get("max_visits")),
		Password:  r.PostForm.Get("password"), // as typed: spaces may be part of it
		Idem:      r.PostForm.Get("idem"),
	}
	f.HadPassword = f.Password != ""
	p.Form = f
	p.Form.Password = "" // the page never holds it
	req, key, scope, owner, status := h.formRequest(c, f, p.Errors)
	if len(p.Errors) == 0 {
		l, _, err := h.createLink(r.Context(), req, key, scope, owner)
		if err == nil {
			v := h.view(l)
			p.Result = &v
			// The answer starts a new form: the next link gets its own key.
			p.Form = shortenForm{Redirect: "302", Idem: newFormKey()}
			return h.render(c, http.StatusCreated, "home", pagePrivate, p)
		}
		field, ok := formField(err)
		if !ok {
			return err // the error page: 429, 503, 500
		}
		out := toHTTP(err)
		p.Errors[field], status = out.Message, out.Status()
		if out.Code == CodeKeyReused {
			p.Errors[field] = "this form was already sent with other values; check them and send it again"
			p.Form.Idem = newFormKey()
		}
	}
	return h.render(c, status, "home", pagePrivate, p)
}

// formRequest turns the typed form into the API's create request; what it
// cannot accept goes into errs. It also returns the Idempotency-Key, its scope, the
// owner of the new link (the API key kept in the browser, if any) and the
// status to answer if errs is not empty.
func (h *Handler) formRequest(c echo.Context, f shortenForm, errs map[string]string) (createRequest, string, string, string, int) {
	status := http.StatusBadRequest
	// Tags, the visit limit and the password are checked by createLink,
	// as the API's are; only what JSON would have refused before it (a
	// limit that is not a whole number) is the form's to say.
	req := createRequest{URL: f.URL, Alias: f.Alias, Tags: splitTags(f.Tags), Password: f.Password}
	if f.URL == "" {
		errs["url"] = "enter the URL to shorten"
	}
	if f.MaxVisits != "" {
		n, err := strconv.ParseInt(f.MaxVisits, 10, 64)
		if err != nil {
			errs["max_visits"] = "enter a whole number of visits, e.g. 100, or leave it empty for no limit"
		}
		req.MaxVisits = n
	}
	if f.Redirect != "" {
		n, err := strconv.Atoi(f.Redirect)
		if err != nil || (n != 301 && n != 302 && n != 307 && n != 308) {
			errs["redirect"] = "choose 301, 302, 307 or 308"
		}
		req.Redirect = n
	}
	if f.Expires != "" {
		t, err := parseFormTime(f.Expires)
		switch {
		case err != nil:
			errs["expires"] = "enter a date and time, e.g. 2027-01-31 23:59"
		case !t.After(h.d.Now()):
			errs["expires"] = "the expiry must be in the future"
		default:
			req.ExpiresAt = &t
		}
	}
	key := ""
	if f.Idem != "" {
		var err error
		if key, err = idempotencyKey(http.Header{"Idempotency-Key": {f.Idem}}); err != nil {
			errs[""] = "the form was damaged; reload the page"
		}
	}
	// Like the API, a key that is not valid any more makes no anonymous
	// link: the person believes they own what they create.
	caller, err := h.cookieCaller(c)
	switch {
	case errors.Is(err, ErrUnknownKey):
		errs[""] = "the API key kept in this browser is not valid any more; forget it on a stats page, or enter another"
		status = http.StatusUnauthorized
	case err != nil:
		errs[""] = "the API key could not be checked; try again in a moment"
		status = http.StatusServiceUnavailable
	case !h.cfg.AnonymousCreate && !caller.Keyed():
		errs[""] = "creating links needs an API key: enter yours on a link's stats page first"
		status = http.StatusUnauthorized
	}
	return req, key, keyScope(caller, c.RealIP()), caller.Owner, status // scoped as the API scopes it
}

// parseFormTime reads a datetime-local value ("2027-01-31T23:59", seconds
// optional), which the form labels as UTC, or an RFC 3339 time.
func parseFormTime(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02 15:04", time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, errors.New("parse form time: not a date and time")
}

// formFields are the form's names of the request fields an API error
// can be about (Error.Field).
var formFields = map[string]string{"url": "url", "alias": "alias", "expires_at": "expires", "redirect": "redirect",
	"tags": "tags", "max_visits": "max_visits", "password": "password"}

// formField names the form field an API error is about; false when the
// error is not the user's to fix in the form.
func formField(err error) (string, bool) {
	out := toHTTP(err)
	if out.Code == CodeKeyReused {
		return "", true
	}
	f, ok := formFields[out.Field]
	return f, ok
}
