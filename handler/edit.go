package handler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"shortener"
	"time"

	"github.com/labstack/echo/v4"
)

// Editor changes links in the source of truth.
type Editor interface {
	// Update applies p to the link with code and durably records that
	// caches must forget it, in one commit, and returns the link as
	// stored: shortener.ErrNotFound if no link has the code,
	// shortener.ErrGone if it was deleted.
	Update(ctx context.Context, code string, p shortener.LinkPatch, now time.Time) (shortener.Link, error)
}

// patchRequest is the body of PATCH /api/v1/links/{code}: every field
// optional. Which fields were sent, and which as null, is read from the
// body itself (patch), since a nil pointer cannot tell absent from null.
type patchRequest struct {
	URL       *string    `json:"url"`
	Redirect  *int       `json:"redirect"`
	ExpiresAt *time.Time `json:"expires_at"`
	Disabled  *bool      `json:"disabled"`
	Tags      *[]string  `json:"tags"`
	MaxVisits *int64     `json:"max_visits"`
	Password  *string    `json:"password"`
}

// edit answers PATCH /api/v1/links/{code} for the link's owner or an
// admin key: the edit is committed in MySQL with its invalidation record
// first, then every cache is told at once, exactly as a delete is
// (remove), so an edited link's old destination is served by no instance
// once the invalidation has landed. 200 with the link as stored.
func (h *Handler) edit(c echo.Context) error {
	if h.d.Editor == nil {
		return &Error{Code: CodeNotFound, Message: "editing is not available"}
	}
	l, err := h.managedLink(c, c.Param("code"))
	if err != nil {
		return err
	}
	if !l.DeletedAt.IsZero() {
		return errGone
	}
	p, err := h.patch(c)
	if err != nil {
		return err
	}
	if l, err = h.update(c.Request().Context(), l.Code, p); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, h.response(l))
}

// update commits the edit p of the link with code, then tells every
// cache to forget the link: the one way a link is edited, by the API and
// the My links page alike.
func (h *Handler) update(ctx context.Context, code string, p shortener.LinkPatch) (shortener.Link, error) {
	if h.d.Editor == nil {
		return shortener.Link{}, &Error{Code: CodeNotFound, Message: "editing is not available"}
	}
	l, err := h.d.Editor.Update(ctx, code, p, h.d.Now())
	if err != nil {
		return shortener.Link{}, err
	}
	if h.d.Invalidator != nil {
		h.d.Invalidator.Invalidate(ctx, l.Code)
	}
	return l, nil
}

// patch reads and validates the request's edit: each field by the rules
// of a create, null clearing what may be cleared (expires_at, tags,
// max_visits, password), and at least one field.
func (h *Handler) patch(c echo.Context) (shortener.LinkPatch, error) {
	var p shortener.LinkPatch
	// The body is read here first, to see its keys as sent, and again
	// (from memory) by decodeJSON, which checks it as every body is.
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return p, err
		}
		return p, badJSON("request body could not be read")
	}
	c.Request().Body = io.NopCloser(bytes.NewReader(body))
	var req patchRequest
	if err := h.decodeJSON(c, &req); err != nil {
		return p, err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil { // decodeJSON took it: cannot fail
		return p, badJSON("request body is not a JSON object")
	}
	sent := make(patchFields, len(raw))
	for name, v := range raw {
		sent[name] = bytes.Equal(bytes.TrimSpace(v), []byte("null"))
	}
	return h.linkPatch(req, sent)
}

// patchFields are the fields an edit sends, each true when sent as null.
type patchFields map[string]bool

// linkPatch validates the edit req whose fields sent lists: the API's
// PATCH and the My links page's forms both turn their edits into a
// patch here, so both accept and refuse the same edits with the same
// errors, each naming its field.
func (h *Handler) linkPatch(req patchRequest, sent patchFields) (shortener.LinkPatch, error) {
	var p shortener.LinkPatch
	var err error
	if len(sent) == 0 {
		return p, &Error{Code: CodeInvalidRequest, Message: "the edit changes nothing: send at least one of url, redirect, expires_at, disabled, tags, max_visits, password"}
	}
	null := func(name string) bool { return sent[name] }
	required := func(name string) error {
		return fieldErrorf(CodeInvalidRequest, name, "%s cannot be null", name)
	}
	if _, ok := sent["url"]; ok {
		if null("url") {
			return p, required("url")
		}
		u, err := h.policy.Validate(*req.URL)
		if err != nil {
			return p, err
		}
		p.URL = &u
	}
	if _, ok := sent["redirect"]; ok {
		if null("redirect") {
			return p, required("redirect")
		}
		if !validRedirect(*req.Redirect) {
			return p, fieldErrorf(CodeInvalidRequest, "redirect", "redirect %d is not one of 301, 302, 307, 308", *req.Redirect)
		}
		p.Redirect = req.Redirect
	}
	if _, ok := sent["expires_at"]; ok {
		var exp time.Time // null: never expires
		if !null("expires_at") {
			if !req.ExpiresAt.After(h.d.Now()) {
				return p, fieldErrorf(CodeInvalidRequest, "expires_at", "expires_at must be in the future, or null to never expire")
			}
			exp = req.ExpiresAt.UTC().Truncate(time.Millisecond)
		}
		p.ExpiresAt = &exp
	}
	if _, ok := sent["disabled"]; ok {
		if null("disabled") {
			return p, required("disabled")
		}
		p.Disabled = req.Disabled
	}
	if _, ok := sent["tags"]; ok {
		var tags []string // null: none
		if req.Tags != nil {
			if tags, err = normalizeTags(*req.Tags); err != nil {
				return p, err
			}
		}
		p.Tags = &tags
	}
	if _, ok := sent["max_visits"]; ok {
		var n int64 // null or 0: no limit
		if req.MaxVisits != nil {
			if n = *req.MaxVisits; n < 0 {
				return p, fieldErrorf(CodeInvalidRequest, "max_visits", "max_visits must be a positive whole number, or 0 or null for no limit")
			}
		}
		p.MaxVisits = &n
	}
	if _, ok := sent["password"]; ok {
		var hash string // null or "": no password
		if req.Password != nil && *req.Password != "" {
			if err := validatePassword(*req.Password); err != nil {
				return p, err
			}
			// Last: the slow step, once everything else is known good.
			if hash, err = hashPassword(*req.Password); err != nil {
				return p, err
			}
		}
		p.PasswordHash = &hash
	}
	return p, nil
}

// validRedirect reports whether a link may answer with status s.
func validRedirect(s int) bool {
	switch s {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}
