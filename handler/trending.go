package handler

import (
	"net/http"
	"shortener"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

// Trender ranks links by recent clicks, answering from memory.
type Trender interface {
	// Top returns at most limit links with the most clicks in window
	// ("5m", "1h" or "24h").
	Top(window string, limit int) (shortener.Trending, error)
}

// Trending answer sizes.
const (
	defaultTrending = 10
	maxTrending     = 100
)

// trendingResponse is the answer of GET /api/v1/trending.
type trendingResponse struct {
	Window string `json:"window"`
	// Source is "redis" (every instance's clicks) or "local" (this
	// instance's view while Redis is out: the last Redis counts plus
	// what it counted since).
	Source string    `json:"source"`
	From   time.Time `json:"from"`
	AsOf   time.Time `json:"as_of"`
	// AgeMS is how old the answer is; SyncedAt when its counts were last
	// read from Redis (absent: never, since this instance started).
	AgeMS    int64          `json:"age_ms"`
	SyncedAt *time.Time     `json:"synced_at,omitempty"`
	Links    []trendingLink `json:"links"`
}

// trendingLink is one ranked link. The answer is public, so it names the
// destination's host only: the full URL (a path may carry a token) is its
// owner's, at GET /api/v1/links/{code}.
type trendingLink struct {
	Code     string `json:"code"`
	ShortURL string `json:"short_url"`
	Host     string `json:"host"`
	Clicks   int64  `json:"clicks"`
}

// trending answers GET /api/v1/trending?window=5m|1h|24h&limit=N.
func (h *Handler) trending(c echo.Context) error {
	window := c.QueryParam("window")
	switch window {
	case "":
		window = "5m"
	case "5m", "1h", "24h":
	default:
		return &Error{Code: CodeInvalidRequest, Message: "window must be 5m, 1h or 24h"}
	}
	limit := defaultTrending
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxTrending {
			return &Error{Code: CodeInvalidRequest, Message: "limit must be a whole number from 1 to " + strconv.Itoa(maxTrending)}
		}
		limit = n
	}
	if h.d.Trending == nil {
		return &Error{Code: CodeNotFound, Message: "trending is not available"}
	}
	t, err := h.d.Trending.Top(window, limit)
	if err != nil {
		return err
	}
	out := trendingResponse{Window: window, Source: t.Source, From: t.From, AsOf: t.AsOf,
		AgeMS: max(h.d.Now().Sub(t.AsOf).Milliseconds(), 0), Links: make([]trendingLink, 0, len(t.Links))}
	if !t.Synced.IsZero() {
		out.SyncedAt = &t.Synced
	}
	for _, tr := range t.Links {
		out.Links = append(out.Links, trendingLink{Code: tr.Link.Code, ShortURL: h.response(tr.Link).ShortURL, Host: hostOf(tr.Link.URL), Clicks: tr.Clicks})
	}
	// A cache may keep it for a second: it is recomputed that often.
	cc := "public, max-age=1"
	if h.cfg.TrendingKeyed {
		cc = "private, max-age=1"
	}
	c.Response().Header().Set("Cache-Control", cc)
	return c.JSON(http.StatusOK, out)
}
