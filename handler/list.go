package handler

import (
	"context"
	"crypto/aes"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"shortener"
	"strconv"

	"github.com/labstack/echo/v4"
)

// Lister pages through the links a key owns.
type Lister interface {
	// OwnedLinks returns up to limit links of owner with an ID below
	// before (0: from the newest), newest first, deleted links left out.
	OwnedLinks(ctx context.Context, owner string, before int64, limit int) ([]shortener.Link, error)
}

// Listing page sizes.
const (
	defaultPage = 50
	maxPage     = 200
)

// listResponse is one page of GET /api/v1/links.
type listResponse struct {
	Links []linkResponse `json:"links"`
	// NextCursor fetches the next page (?cursor=); absent on the last.
	NextCursor string `json:"next_cursor,omitempty"`
}

// list answers GET /api/v1/links: the calling key's own links, newest
// first, one page at a time. The cursor is the last link's ID, encrypted
// (sealCursor): opaque to clients, so pages stay stable while links are
// added, and no raw Snowflake ID (its time, its node, and with its code a
// known pair for the code permutation) is handed out.
func (h *Handler) list(c echo.Context) error {
	limit := defaultPage
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPage {
			return &Error{Code: CodeInvalidRequest, Message: "limit must be a whole number from 1 to " + strconv.Itoa(maxPage)}
		}
		limit = n
	}
	var before int64
	if v := c.QueryParam("cursor"); v != "" {
		n, ok := h.openCursor(v)
		if !ok || n <= 0 {
			return &Error{Code: CodeInvalidRequest, Message: "cursor is not one this API returned"}
		}
		before = n
	}
	if h.d.Lister == nil {
		return &Error{Code: CodeNotFound, Message: "listing is not available"}
	}
	// One more than asked tells whether another page follows.
	links, err := h.d.Lister.OwnedLinks(c.Request().Context(), callerOf(c).Owner, before, limit+1)
	if err != nil {
		return err
	}
	out := listResponse{Links: make([]linkResponse, 0, min(len(links), limit))}
	for i, l := range links {
		if i == limit {
			out.NextCursor = h.sealCursor(links[i-1].ID)
			break
		}
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
