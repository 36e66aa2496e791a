package handler

import (
	"fmt"
	"net/http"
	"net/url"
	"shortener"
	"strings"

	"github.com/labstack/echo/v4"
)

// My links (GET /links) is the owner's page of the API key kept in the
// browser: its links, searched and paged as GET /api/v1/links pages
// them, each with forms that edit, disable, enable, protect or delete it
// (POST /links/{code}) and the export to download (GET /links/export).
// It adds no rule of its own: each form calls what the API's handler for
// the same change calls (parseSearch and search, managedLink, linkPatch
// and update, delete, export), so the page and the API accept and
// refuse the same things with the same messages. Everything works
// without JavaScript: a form posts, the answer is a 303 back to the list
// with a flash message, or the list again with the error next to its
// field.

// myLinksTitle is the page's title and heading.
const myLinksTitle = "My links"

// linksPageSize is how many links the page lists at a time.
const linksPageSize = 20

// linksPage is what GET /links renders.
type linksPage struct {
	Title    string
	NeedKey  bool   // no key kept, or it was refused: show the key form
	KeyError string // why the key was refused
	Search   linksQuery
	Errors   map[string]string // the search's errors by field ("q", "tag"); "" is the page's
	Rows     []linkRow
	Next     string // the next (older) page, "" on the last
	First    string // the first page of the same search, "" on it
	Flash    string // what the last action did
	Note     string // why there is no list to show
}

// linksQuery is the page's search as typed, carried by every link and
// form of the page so that an action comes back to the same list.
type linksQuery struct {
	Q, Tag, Cursor string
}

// values is q as the page's query parameters.
func (q linksQuery) values() url.Values {
	v := url.Values{}
	for _, p := range []struct{ name, val string }{{"q", q.Q}, {"tag", q.Tag}, {"cursor", q.Cursor}} {
		if p.val != "" {
			v.Set(p.name, p.val)
		}
	}
	return v
}

// URL is the list q shows.
func (q linksQuery) URL() string {
	if v := q.values().Encode(); v != "" {
		return "/links?" + v
	}
	return "/links"
}

// Filtered reports whether q narrows the list.
func (q linksQuery) Filtered() bool { return q.Q != "" || q.Tag != "" }

// linkRow is one link of the list, with what its forms were sent with
// when one of them was refused.
type linkRow struct {
	linkView
	Expired bool
	Open    bool              // its forms are shown: one of them was refused
	Errors  map[string]string // a refused form's errors by field: "url", "password", "confirm"
	Typed   string            // the destination as typed into a refused edit
}

// linksQueryOf reads the page's search from query parameters or a form.
func linksQueryOf(v url.Values) linksQuery {
	return linksQuery{Q: v.Get("q"), Tag: v.Get("tag"), Cursor: v.Get("cursor")}
}

// links answers GET /links: the key's links, newest first, searched and
// paged as the API's list is, or the key form without a key.
func (h *Handler) links(c echo.Context) error {
	flash := h.takeFlash(c)
	caller, needKey, keyError, err := h.pageCaller(c)
	switch {
	case err != nil:
		return err
	case needKey:
		return h.render(c, http.StatusOK, "links", pagePrivate, linksPage{Title: myLinksTitle, NeedKey: true, KeyError: keyError})
	}
	p, status, err := h.listLinks(c, caller, linksQueryOf(c.QueryParams()))
	if err != nil {
		return err
	}
	p.Flash = flash
	return h.render(c, status, "links", pagePrivate, p)
}

// listLinks is the page for the search q of caller's links: a search the
// API would refuse is shown with its error next to its field.
func (h *Handler) listLinks(c echo.Context, caller shortener.Caller, q linksQuery) (linksPage, int, error) {
	p := linksPage{Title: myLinksTitle, Search: q, Errors: map[string]string{}}
	if h.d.Lister == nil {
		p.Note = "Listing links is not available on this server."
		return p, http.StatusOK, nil
	}
	s, err := h.parseSearch(q.values(), linksPageSize)
	if err != nil {
		out := toHTTP(err)
		if out.Field != "q" && out.Field != "tag" {
			out.Field = "" // the cursor: the page's own, so the page's error
		}
		p.Errors[out.Field] = out.Message
		return p, out.Status(), nil
	}
	links, next, err := h.search(c.Request().Context(), caller.Owner, s)
	if err != nil {
		return p, 0, err
	}
	now := h.d.Now()
	for _, l := range links {
		p.Rows = append(p.Rows, linkRow{linkView: h.view(l), Expired: l.Gone(now), Errors: map[string]string{}})
	}
	if next != "" {
		p.Next = linksQuery{Q: q.Q, Tag: q.Tag, Cursor: next}.URL()
	}
	if q.Cursor != "" {
		p.First = linksQuery{Q: q.Q, Tag: q.Tag}.URL()
	}
	return p, http.StatusOK, nil
}

// linkActions are the changes the page's forms make, each named by its
// action field; what each did is its flash message.
var linkActions = map[string]string{
	"edit":           "The destination of %s is changed.",
	"disable":        "%s is disabled: it answers 410 until you enable it.",
	"enable":         "%s is enabled: it redirects again.",
	"password":       "%s now asks for its password before it opens.",
	"clear-password": "%s no longer asks for a password.",
	"delete":         "%s is deleted: it answers 410 from now on.",
}

// manage answers POST /links/{code}: one of the page's forms, refused
// from another site, applied to a link the kept key manages (as
// managedLink decides for the API) by the API's own code, then a 303
// back to the list the form was on, with a flash message; or that list
// again with the error next to the field at fault.
func (h *Handler) manage(c echo.Context) error {
	r := c.Request()
	if err := readForm(c, maxBody); err != nil {
		return err
	}
	action := r.PostForm.Get("action")
	if _, ok := linkActions[action]; !ok {
		return &Error{Code: CodeInvalidRequest, Message: "the form was damaged (no such action); reload the page"}
	}
	caller, needKey, keyError, err := h.pageCaller(c)
	switch {
	case err != nil:
		return err
	case needKey:
		if keyError == "" {
			keyError = "enter your API key to manage your links"
		}
		return h.render(c, http.StatusUnauthorized, "links", pagePrivate, linksPage{Title: myLinksTitle, NeedKey: true, KeyError: keyError})
	}
	c.Set(callerKey, caller) // managedLink decides as for the API
	l, err := h.managedLink(c, c.Param("code"))
	if err != nil {
		return err
	}
	if !l.DeletedAt.IsZero() {
		return errGone
	}
	back := linksQueryOf(r.PostForm)
	ctx := r.Context()
	typed := ""
	switch action {
	case "edit":
		typed = strings.TrimSpace(r.PostForm.Get("url"))
		err = h.apply(c, l.Code, patchRequest{URL: &typed}, patchFields{"url": false})
	case "disable", "enable":
		off := action == "disable"
		err = h.apply(c, l.Code, patchRequest{Disabled: &off}, patchFields{"disabled": false})
	case "password":
		// "" would clear it in a PATCH; here it is a password left out.
		pw := r.PostForm.Get("password")
		if err = validatePassword(pw); err == nil {
			err = h.apply(c, l.Code, patchRequest{Password: &pw}, patchFields{"password": false})
		}
	case "clear-password":
		err = h.apply(c, l.Code, patchRequest{}, patchFields{"password": true})
	case "delete":
		if r.PostForm.Get("confirm") != "yes" {
			err = fieldErrorf(CodeInvalidRequest, "confirm", "tick the box to confirm: a deleted link never works again")
		} else {
			err = h.delete(ctx, l.Code)
		}
	}
	if err != nil {
		return h.refused(c, caller, back, l.Code, typed, err)
	}
	h.setFlash(c, action, l.Code)
	return c.Redirect(http.StatusSeeOther, back.URL())
}

// apply validates and commits one form's edit of the link with code.
func (h *Handler) apply(c echo.Context, code string, req patchRequest, sent patchFields) error {
	p, err := h.linkPatch(req, sent)
	if err != nil {
		return err
	}
	_, err = h.update(c.Request().Context(), code, p)
	return err
}

// refused answers a form of the page the API's code refused: an error
// about a field is shown next to it in the link's row, with the list the
// form was on, in the error's status; any other is the error page.
func (h *Handler) refused(c echo.Context, caller shortener.Caller, back linksQuery, code, typed string, err error) error {
	out := toHTTP(err)
	if out.Field == "" {
		return err
	}
	p, _, lerr := h.listLinks(c, caller, back)
	if lerr != nil {
		return err
	}
	found := false
	for i := range p.Rows {
		if row := &p.Rows[i]; row.Code == code {
			row.Open, row.Errors[out.Field], row.Typed, found = true, out.Message, typed, true
		}
	}
	if !found { // not on this page any more: said at the top
		p.Errors[""] = code + ": " + out.Message
	}
	return h.render(c, out.Status(), "links", pagePrivate, p)
}

// linksExport answers GET /links/export?format=csv|jsonl: the API's
// export of the kept key's links, as a download; without a key, the
// list, which asks for it.
func (h *Handler) linksExport(c echo.Context) error {
	caller, needKey, _, err := h.pageCaller(c)
	switch {
	case err != nil:
		return err
	case needKey:
		return c.Redirect(http.StatusSeeOther, "/links")
	}
	c.Set(callerKey, caller)
	return h.export(c)
}

// flashCookieName carries what an action did to the list it redirects
// to: the action and the link's code, never text (the message is
// linkActions'), for that one page, for a minute at most.
const flashCookieName = "shortener_flash"

// setFlash keeps what action did to code for the next GET /links.
func (h *Handler) setFlash(c echo.Context, action, code string) {
	c.SetCookie(&http.Cookie{Name: flashCookieName, Value: action + "." + code, Path: "/links", MaxAge: 60,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: strings.HasPrefix(h.cfg.BaseURL, "https:")})
}

// takeFlash returns the message the flash cookie names ("" for none or
// one this page did not set) and has the browser forget it.
func (h *Handler) takeFlash(c echo.Context) string {
	ck, err := c.Cookie(flashCookieName)
	if err != nil {
		return ""
	}
	c.SetCookie(&http.Cookie{Name: flashCookieName, Path: "/links", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: strings.HasPrefix(h.cfg.BaseURL, "https:")})
	action, code, _ := strings.Cut(ck.Value, ".")
	msg, ok := linkActions[action]
	if !ok || !plausibleCode(code) {
		return ""
	}
	return fmt.Sprintf(msg, code)
}
