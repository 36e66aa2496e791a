package handler

import (
	"math"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"shortener"
)

// Password attempts: per client address and link, unlockBurst at once,
// then one every unlockEvery. A check (passwordMatches) takes tens of
// milliseconds of CPU, so the limit guards the CPU as well as the
// password: a guesser gets about 65 tries an hour per address and link.
const (
	unlockBurst = 5
	unlockEvery = 60.0 // seconds
)

// passwordPage is the form a password-protected link answers a browser.
type passwordPage struct {
	Title    string
	Code     string
	ShortURL string
	Error    string
}

// locked answers a request for a password-protected link that brings no
// password: a browser gets the form, which posts back to /{code}; HEAD
// and API clients get 401 password_required. Nothing in the answer
// names the destination.
func (h *Handler) locked(c echo.Context, l shortener.Link, msg string) error {
	if c.Request().Method == http.MethodHead || h.site == nil || !h.htmlError(c) {
		return errPasswordRequired
	}
	return h.render(c, http.StatusUnauthorized, "password", pagePrivate,
		passwordPage{Title: "Password required", Code: l.Code, ShortURL: h.response(l).ShortURL, Error: msg})
}

// unlock answers POST /{code}, the password form: the right password
// answers the link's redirect (a click, counted as a GET's is); a wrong
// one the form again with an error. Cross-origin posts are refused, as
// for the other forms, and attempts are limited per address and link.
func (h *Handler) unlock(c echo.Context) error {
	code := c.Param("code")
	if !plausibleCode(code) {
		setOp(c, defaultOp(c.Request()))
		return shortener.ErrNotFound
	}
	r := c.Request()
	if err := readForm(c, 4<<10); err != nil {
		return err
	}
	l, now, err := h.live(r.Context(), code)
	switch {
	case err != nil:
		return err
	case l.PasswordHash == "":
		// Nothing to unlock: the browser asks again with a GET.
		return c.Redirect(http.StatusSeeOther, "/"+code)
	}
	if ok, wait := h.unlockLimit.allow("unlock:"+clientKey(c.RealIP())+" "+code, 1/unlockEvery, unlockBurst); !ok {
		retry := strconv.Itoa(max(1, int(math.Ceil(wait.Seconds()))))
		c.Response().Header().Set("Retry-After", retry)
		return &Error{Code: CodeRateLimited, Message: "too many password attempts for this link from this address; retry after " + retry + " s"}
	}
	pw := r.PostForm.Get("password")
	if !passwordMatches(l.PasswordHash, pw) {
		return h.locked(c, l, "That password is not right.")
	}
	return h.follow(c, l, now)
}
