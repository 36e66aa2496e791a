package handler

import (
	"context"
	"crypto/aes"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"net/url"
	"shortener"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

// Lister pages through and searches the links a key owns.
type Lister interface {
	// SearchLinks returns up to limit links of owner, deleted links left
	// out, past cursor (an ID; 0: from the first) newest first, or with
	// oldest the other way, that match every filter given: match ("":
	// any) a substring of the code as written or of the URL in any letter
	// case, tag ("": any) one of its tags, created after from and before
	// to (zero: unbounded).
	SearchLinks(ctx context.Context, owner, match, tag string, from, to time.Time, cursor int64, oldest bool, limit int) ([]shortener.Link, error)
}

// Listing page sizes, and the longest search text.
const (
	defaultPage = 50
	maxPage     = 200
	maxQuery    = 256
)

// listResponse is one page of GET /api/v1/links.
type listResponse struct {
	Links []linkResponse `json:"links"`
	// NextCursor fetches the next page (?cursor=); absent on the last.
	NextCursor string `json:"next_cursor,omitempty"`
}

// linkSearch is one page of a key's links asked for: the filters of
// GET /api/v1/links, read by parseSearch for the API and the My links
// page alike.
type linkSearch struct {
	limit   int
	cursor  int64 // an ID; 0: from the first
	q, tag  string
	created [2]time.Time // after, before; zero: unbounded
	oldest  bool
}

// parseSearch reads a search from query parameters by the API's rules,
// with limit def when none is given; a refusal names the parameter at
// fault (Error.Field), but for limit and cursor.
func (h *Handler) parseSearch(params url.Values, def int) (linkSearch, error) {
	s := linkSearch{limit: def}
	if v := params.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPage {
			return s, &Error{Code: CodeInvalidRequest, Message: "limit must be a whole number from 1 to " + strconv.Itoa(maxPage)}
		}
		s.limit = n
	}
	if v := params.Get("cursor"); v != "" {
		n, ok := h.openCursor(v)
		if !ok || n <= 0 {
			return s, &Error{Code: CodeInvalidRequest, Message: "cursor is not one this API returned"}
		}
		s.cursor = n
	}
	s.q = params.Get("q")
	if len(s.q) > maxQuery {
		return s, fieldErrorf(CodeInvalidRequest, "q", "q is %d bytes; the limit is %d", len(s.q), maxQuery)
	}
	if s.tag = params.Get("tag"); s.tag != "" {
		var ok bool
		if s.tag, ok = normalizeTag(s.tag); !ok {
			return s, fieldErrorf(CodeInvalidRequest, "tag", "tag must be 1 to %d of a-z, 0-9, '-' and '_'", maxTagLen)
		}
	}
	for i, name := range []string{"created_after", "created_before"} {
		if v := params.Get(name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return s, fieldErrorf(CodeInvalidRequest, name, "%s must be an RFC 3339 time, e.g. 2027-01-31T23:59:59Z", name)
			}
			s.created[i] = t
		}
	}
	switch params.Get("order") {
	case "", "newest":
	case "oldest":
		s.oldest = true
	default:
		return s, fieldErrorf(CodeInvalidRequest, "order", "order must be newest or oldest")
	}
	return s, nil
}

// search returns the page s asks for of owner's links, and the cursor of
// the next page ("" on the last).
func (h *Handler) search(ctx context.Context, owner string, s linkSearch) ([]shortener.Link, string, error) {
	if h.d.Lister == nil {
		return nil, "", &Error{Code: CodeNotFound, Message: "listing is not available"}
	}
	// One more than asked tells whether another page follows.
	links, err := h.d.Lister.SearchLinks(ctx, owner, s.q, s.tag, s.created[0], s.created[1], s.cursor, s.oldest, s.limit+1)
	if err != nil {
		return nil, "", err
	}
	if len(links) <= s.limit {
		return links, "", nil
	}
	return links[:s.limit], h.sealCursor(links[s.limit-1].ID), nil
}

// list answers GET /api/v1/links: the calling key's own links (an admin
// key's too: its own, never everyone's), newest first or with
// order=oldest the other way, one page at a time, filtered by
// q (in the code or the URL), tag and created_after/created_before. The
// cursor is the last link's ID, encrypted (sealCursor): opaque to
// clients, so pages stay stable while links are added, and no raw
// Snowflake ID (its time, its node, and with its code a known pair for
// the code permutation) is handed out.
func (h *Handler) list(c echo.Context) error {
	s, err := h.parseSearch(c.QueryParams(), defaultPage)
	if err != nil {
		return err
	}
	links, next, err := h.search(c.Request().Context(), callerOf(c).Owner, s)
	if err != nil {
		return err
	}
	out := listResponse{Links: make([]linkResponse, 0, len(links)), NextCursor: next}
	for _, l := range links {
		out.Links = append(out.Links, h.response(l))
	}
	return c.JSON(http.StatusOK, out)
}

// sealCursor encrypts id as a list cursor: AES under a key derived from
// the server secret, the ID in the first 8 bytes of the block and zeros in
// the rest, base64url (22 characters).
func (h *Handler) sealCursor(id int64) string {
	var b [aes.BlockSize]byte
	binary.BigEndian.PutUint64(b[:], uint64(id))
	h.cursor.Encrypt(b[:], b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// openCursor decrypts a cursor sealCursor made; a forged or altered one
// fails (its zeros do not come back but once in 2^64).
func (h *Handler) openCursor(v string) (int64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(b) != aes.BlockSize {
		return 0, false
	}
	h.cursor.Decrypt(b, b)
	for _, z := range b[8:] {
		if z != 0 {
			return 0, false
		}
	}
	return int64(binary.BigEndian.Uint64(b)), true
}
