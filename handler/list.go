package handler

import (
	"context"
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
// first, one page at a time. The cursor is opaque to clients (it is the
// last link's ID in base 36), so pages stay stable while links are added.
func (h *Handler) list(c echo.Context) error {
	limit := defaultPage
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPage {
			return &Error{Status: 400, Code: CodeInvalidRequest, Message: "limit must be a whole number from 1 to " + strconv.Itoa(maxPage)}
		}
		limit = n
	}
	var before int64
	if v := c.QueryParam("cursor"); v != "" {
		n, err := strconv.ParseInt(v, 36, 64)
		if err != nil || n <= 0 {
			return &Error{Status: 400, Code: CodeInvalidRequest, Message: "cursor is not one this API returned"}
		}
		before = n
	}
	if h.d.Lister == nil {
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "listing is not available"}
	}
	// One more than asked tells whether another page follows.
	links, err := h.d.Lister.OwnedLinks(c.Request().Context(), callerOf(c).Owner, before, limit+1)
	if err != nil {
		return err
	}
	out := listResponse{Links: make([]linkResponse, 0, min(len(links), limit))}
	for i, l := range links {
		if i == limit {
			out.NextCursor = strconv.FormatInt(links[i-1].ID, 36)
			break
		}
		out.Links = append(out.Links, h.response(l))
	}
	return c.JSON(http.StatusOK, out)
}
