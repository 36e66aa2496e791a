package handler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"shortener"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// createRequest is the body of POST /api/v1/links, and one link of a
// batch.
type createRequest struct {
	URL       string     `json:"url"`
	Alias     string     `json:"alias,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	Redirect  int        `json:"redirect,omitempty"`
	Tags      []string   `json:"tags,omitempty"`
	MaxVisits int64      `json:"max_visits,omitempty"`
	Password  string     `json:"password,omitempty"`
}

// linkResponse is how a link is shown to API clients: never its
// password's hash, only whether it has one.
type linkResponse struct {
	Code              string     `json:"code"`
	ShortURL          string     `json:"short_url"`
	URL               string     `json:"url"`
	Redirect          int        `json:"redirect"`
	CreatedAt         time.Time  `json:"created_at"`
	ExpiresAt         *time.Time `json:"expires_at,omitempty"`
	UpdatedAt         *time.Time `json:"updated_at,omitempty"`
	Disabled          bool       `json:"disabled"`
	Tags              []string   `json:"tags"`
	MaxVisits         int64      `json:"max_visits,omitempty"`
	PasswordProtected bool       `json:"password_protected"`
}

func (h *Handler) response(l shortener.Link) linkResponse {
	r := linkResponse{
		Code:      l.Code,
		ShortURL:  strings.TrimSuffix(h.cfg.BaseURL, "/") + "/" + l.Code,
		URL:       l.URL,
		Redirect:  l.Redirect,
		CreatedAt: l.CreatedAt.UTC(),
		Disabled:  l.Disabled, Tags: l.Tags, MaxVisits: l.MaxVisits, PasswordProtected: l.PasswordHash != "",
	}
	if !l.ExpiresAt.IsZero() {
		t := l.ExpiresAt.UTC()
		r.ExpiresAt = &t
	}
	if !l.UpdatedAt.IsZero() {
		t := l.UpdatedAt.UTC()
		r.UpdatedAt = &t
	}
	if r.Tags == nil {
		r.Tags = []string{}
	}
	return r
}

// create answers POST /api/v1/links. The link is committed in MySQL
// before 201 is sent; warming Redis is best effort.
func (h *Handler) create(c echo.Context) error {
	var req createRequest
	if err := h.decodeJSON(c, &req); err != nil {
		return err
	}
	key, err := idempotencyKey(c.Request().Header)
	if err != nil {
		return err
	}
	l, replayed, err := h.createLink(c.Request().Context(), req, key, keyScope(callerOf(c), c.RealIP()), callerOf(c).Owner)
	if err != nil {
		return err
	}
	if replayed {
		if l.Gone(h.d.Now()) {
			// The first answer's link was deleted (or expired) since: a
			// 201 would tell the client it has a working link.
			return errGone
		}
		c.Response().Header().Set("Idempotent-Replayed", "true")
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/v1/links/"+l.Code)
	return c.JSON(http.StatusCreated, h.response(l))
}

// createLink validates req and stores the link for owner ("" for an
// anonymous link), under the Idempotency-Key key if not "", then warms
// the cache. The API's create and the web form share it, so both accept
// and refuse exactly the same links.
func (h *Handler) createLink(ctx context.Context, req createRequest, key, scope, owner string) (shortener.Link, bool, error) {
	u, err := h.policy.Validate(req.URL)
	if err != nil {
		return shortener.Link{}, false, err
	}
	if req.Alias != "" {
		if err := h.validateAlias(req.Alias); err != nil {
			return shortener.Link{}, false, err
		}
	}
	now := h.d.Now().UTC().Truncate(time.Millisecond)
	l := shortener.Link{URL: u, Redirect: http.StatusFound, CreatedAt: now, Owner: owner}
	switch req.Redirect {
	case 0:
	case http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		l.Redirect = req.Redirect
	default:
		return shortener.Link{}, false, fieldErrorf(CodeInvalidRequest, "redirect", "redirect %d is not one of 301, 302, 307, 308", req.Redirect)
	}
	if req.ExpiresAt != nil {
		if !req.ExpiresAt.After(now) {
			return shortener.Link{}, false, fieldErrorf(CodeInvalidRequest, "expires_at", "expires_at must be in the future")
		}
		l.ExpiresAt = req.ExpiresAt.UTC().Truncate(time.Millisecond)
	}
	if l.Tags, err = normalizeTags(req.Tags); err != nil {
		return shortener.Link{}, false, err
	}
	if l.MaxVisits = req.MaxVisits; l.MaxVisits < 0 {
		return shortener.Link{}, false, fieldErrorf(CodeInvalidRequest, "max_visits", "max_visits must be a positive whole number")
	}
	var pwPrint string
	if req.Password != "" {
		if err := validatePassword(req.Password); err != nil {
			return shortener.Link{}, false, err
		}
		// Last: the slow step, once everything else is known good.
		if l.PasswordHash, err = hashPassword(req.Password); err != nil {
			return shortener.Link{}, false, err
		}
		pwPrint = h.passwordFingerprint(req.Password)
	}
	l, replayed, err := h.insert(ctx, l, req.Alias, pwPrint, key, scope, now)
	if err != nil {
		return shortener.Link{}, false, err
	}
	switch {
	case h.d.Warmer == nil:
	case req.Alias != "":
		h.d.Warmer.Add(ctx, l)
	default:
		h.d.Warmer.AddIssued(ctx, l)
	}
	return l, replayed, nil
}

// show answers GET /api/v1/links/{code} from the source of truth, so API
// clients always see the current state; only to the link's owner or an
// admin key, so it cannot be used to scrape links.
func (h *Handler) show(c echo.Context) error {
	l, err := h.managedLink(c, c.Param("code"))
	if err != nil {
		return err
	}
	if !l.DeletedAt.IsZero() {
		return errGone
	}
	return c.JSON(http.StatusOK, h.response(l))
}

// callerKey is where identify keeps the request's shortener.Caller.
const callerKey = "shortener.caller"

// identify reads X-Api-Key: a known key makes the request its owner's, no
// header makes it anonymous, and a header with an unknown or revoked key is
// 401, never anonymous, since the client believes it owns what it creates.
func (h *Handler) identify(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		vals := c.Request().Header.Values("X-Api-Key")
		if len(vals) == 0 {
			c.Set(callerKey, shortener.Caller{})
			return next(c)
		}
		if len(vals) > 1 || h.d.Keys == nil {
			return errUnauthorized
		}
		caller, err := h.d.Keys.Identify(c.Request().Context(), vals[0])
		switch {
		case errors.Is(err, ErrUnknownKey):
			return errUnauthorized
		case err != nil:
			return err
		}
		c.Set(callerKey, caller)
		return next(c)
	}
}

var errUnauthorized = &Error{Code: CodeUnauthorized, Message: "a valid X-Api-Key header is required"}

// callerOf returns who made the request (anonymous when identify did not
// run).
func callerOf(c echo.Context) shortener.Caller {
	caller, _ := c.Get(callerKey).(shortener.Caller)
	return caller
}

// requireKey admits calls that carry a valid API key in X-Api-Key.
func (h *Handler) requireKey(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !callerOf(c).Keyed() {
			return errUnauthorized
		}
		return next(c)
	}
}

// managedLink returns the link with code if the request's key may manage
// it: its owner's key or an admin key (behind requireKey). Deleted and
// expired links are returned too; the caller decides what they mean.
// Routes about one link (delete, show, stats) call it first.
func (h *Handler) managedLink(c echo.Context, code string) (shortener.Link, error) {
	if !plausibleCode(code) {
		return shortener.Link{}, shortener.ErrNotFound
	}
	l, err := h.d.Links.Link(c.Request().Context(), code)
	if err != nil {
		return shortener.Link{}, err
	}
	if !callerOf(c).Manages(l) {
		return shortener.Link{}, &Error{Code: CodeForbidden, Message: "this link belongs to another API key"}
	}
	return l, nil
}

// remove answers DELETE /api/v1/links/{code}: 204 once the delete and its
// invalidation record are committed in MySQL. The caches are then told at
// once; if Redis cannot hear it now, the record is replayed later. A link
// deleted already is 410.
func (h *Handler) remove(c echo.Context) error {
	l, err := h.managedLink(c, c.Param("code"))
	if err != nil {
		return err
	}
	if !l.DeletedAt.IsZero() {
		return errGone
	}
	if err := h.delete(c.Request().Context(), l.Code); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// delete commits the delete of the link with code, then tells every cache
// to forget it: the one way a link is deleted, by the API and the My
// links page alike.
func (h *Handler) delete(ctx context.Context, code string) error {
	if err := h.d.Links.Delete(ctx, code, h.d.Now()); err != nil {
		return err
	}
	if h.d.Invalidator != nil {
		h.d.Invalidator.Invalidate(ctx, code)
	}
	return nil
}

// codeAttempts bounds how many fresh codes a create tries when the one it
// drew is taken. Distinct node IDs make a collision impossible in theory;
// the unique key on links.code is the guard for when practice differs
// (two instances misconfigured with one node ID, a clock stepped back).
const codeAttempts = 3

// insert stores l under a freshly drawn ID and code, drawing again if the
// code is taken, and under the idempotency key if there is one. With an
// alias, the alias is the code and a taken alias is final (409).
func (h *Handler) insert(ctx context.Context, l shortener.Link, alias, pwPrint, key, scope string, now time.Time) (shortener.Link, bool, error) {
	var err error
	for range codeAttempts {
		l.ID, l.Code = h.d.IDs.Next()
		if alias != "" {
			l.Code = alias
		}
		if key == "" {
			err = h.d.Links.Create(ctx, l)
			if err == nil {
				return l, false, nil
			}
		} else {
			var got shortener.Link
			var replayed bool
			got, replayed, err = h.d.Links.CreateIdempotent(ctx, l, shortener.Idempotency{
				Scope:       scope,
				Key:         key,
				RequestHash: requestHash(l, alias, pwPrint),
				ExpiresAt:   now.Add(h.cfg.IdempotencyTTL),
			})
			if err == nil {
				return got, replayed, nil
			}
		}
		if errors.Is(err, shortener.ErrIDTaken) {
			// The ID, not the code, was issued before: draw another,
			// alias or not (a taken ID is never "alias taken").
			h.log.Warn("generated ID already taken; drawing another", "id", l.ID)
			continue
		}
		if !errors.Is(err, shortener.ErrCodeTaken) {
			return shortener.Link{}, false, err
		}
		if alias != "" {
			return shortener.Link{}, false, fieldErrorf(CodeAliasTaken, "alias", "alias %q is taken", alias)
		}
		h.log.Warn("generated code already taken; drawing another", "code", l.Code)
	}
	return shortener.Link{}, false, fmt.Errorf("create link: %d codes in a row were taken: %w", codeAttempts, err)
}

// maxKeyLen bounds an Idempotency-Key; a UUID needs 36 bytes.
const maxKeyLen = 255

// idempotencyKey returns the request's Idempotency-Key, "" if none. A key
// is 1 to 255 printable ASCII characters.
func idempotencyKey(h http.Header) (string, error) {
	vals := h.Values("Idempotency-Key")
	if len(vals) == 0 {
		return "", nil
	}
	k := vals[0]
	bad := len(vals) > 1 || k == "" || len(k) > maxKeyLen
	for i := 0; i < len(k) && !bad; i++ {
		bad = k[i] < 0x21 || k[i] > 0x7e
	}
	if bad {
		return "", &Error{Code: CodeInvalidRequest, Message: "Idempotency-Key must be one header of 1 to 255 printable ASCII characters"}
	}
	return k, nil
}

// requestHash fingerprints what a create asks for, so a retry can be told
// from another request reusing its key. pwPrint stands for the password
// (passwordFingerprint; "" for none).
func requestHash(l shortener.Link, alias, pwPrint string) string {
	var exp int64
	if !l.ExpiresAt.IsZero() {
		exp = l.ExpiresAt.UnixMilli()
	}
	// Every field of the request, each length-prefixed so no two requests
	// share a fingerprint by moving text between fields. A request
	// without the fields v3 added keeps its v2 fingerprint, so a retry
	// sent across an upgrade still replays.
	s := fmt.Sprintf("v2\n%d:%s\n%d:%s\n%d\n%d", len(l.URL), l.URL, len(alias), alias, l.Redirect, exp)
	if len(l.Tags) > 0 || l.MaxVisits != 0 || pwPrint != "" {
		tags := strings.Join(l.Tags, " ")
		s = fmt.Sprintf("v3%s\n%d:%s\n%d\n%s", s[2:], len(tags), tags, l.MaxVisits, pwPrint)
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// keyScope is who an Idempotency-Key belongs to: the API key's owner
// identity, or the client address for an anonymous create, hashed. One
// client can then neither replay another's answer nor squat another's key.
func keyScope(caller shortener.Caller, clientAddr string) string {
	scope := "addr:" + clientAddr
	if caller.Keyed() {
		scope = "key:" + caller.Owner
	}
	sum := sha256.Sum256([]byte(scope))
	return hex.EncodeToString(sum[:])
}
