package handler

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"shortener"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

// Stats reads a link's click counts from the source of truth.
type Stats interface {
	// ClickStats returns the clicks of the link with ID linkID in
	// [from, to), in hourly or (daily) daily buckets, with the top
	// referrer hosts.
	ClickStats(ctx context.Context, linkID int64, from, to time.Time, daily bool, top int) (shortener.ClickStats, error)
}

// Stats query bounds: a series has at most this many buckets.
const (
	maxHourBuckets = 31 * 24
	maxDayBuckets  = 3660
	topReferrers   = 10
)

type statsResponse struct {
	Code      string          `json:"code"`
	From      time.Time       `json:"from"`
	To        time.Time       `json:"to"`
	Interval  string          `json:"interval"`
	Total     int64           `json:"total"`
	Series    []statsBucket   `json:"series"`
	Referrers []statsReferrer `json:"referrers"`
	Agents    statsAgents     `json:"agents"`
	// The analytics (docs/analytics.md): unique visitors over the range
	// (once per UTC day each), and each dimension's counts over the
	// range's whole UTC days.
	UniqueVisitors int64            `json:"unique_visitors"`
	Countries      map[string]int64 `json:"countries"`
	Browsers       map[string]int64 `json:"browsers"`
	OS             map[string]int64 `json:"os"`
	Devices        map[string]int64 `json:"devices"`
	AsOf           time.Time        `json:"as_of"`
}

type statsBucket struct {
	Start    time.Time `json:"start"`
	Clicks   int64     `json:"clicks"`
	Visitors int64     `json:"visitors"`
}

type statsReferrer struct {
	Host   string `json:"host"`
	Clicks int64  `json:"clicks"`
}

type statsAgents struct {
	Browser int64 `json:"browser"`
	Bot     int64 `json:"bot"`
}

// stats answers GET /api/v1/links/{code}/stats?from=&to=&interval=hour|day.
// Counts include every click shipped from the instances' journals; as_of
// says up to when they are complete. A deleted link keeps its counts.
// Only the link's owner (or an admin key) may read them.
func (h *Handler) stats(c echo.Context) error {
	if h.d.Stats == nil {
		return shortener.ErrUnavailable
	}
	q := c.QueryParams()
	csvOut := false
	switch q.Get("format") {
	case "", "json":
	case "csv":
		csvOut = true
	default:
		return &Error{Code: CodeInvalidRequest, Field: "format", Message: "format must be json or csv"}
	}
	daily := true
	step := 24 * time.Hour
	switch q.Get("interval") {
	case "", "day":
	case "hour":
		daily, step = false, time.Hour
	default:
		return &Error{Code: CodeInvalidRequest, Message: "interval must be hour or day"}
	}
	now := h.d.Now().UTC()
	to, err := parseStatsTime(q.Get("to"), now, "to")
	if err != nil {
		return err
	}
	// to is exclusive: round it up to the end of its bucket.
	if t := to.Truncate(step); t.Before(to) {
		to = t.Add(step)
	}
	def := to.Add(-30 * step)
	if !daily {
		def = to.Add(-24 * step)
	}
	from, err := parseStatsTime(q.Get("from"), def, "from")
	if err != nil {
		return err
	}
	from = from.Truncate(step)
	maxBuckets := maxDayBuckets
	if !daily {
		maxBuckets = maxHourBuckets
	}
	switch {
	case !from.Before(to):
		return &Error{Code: CodeInvalidRequest, Message: "from must be before to"}
	case to.Sub(from)/step > time.Duration(maxBuckets):
		return &Error{Code: CodeInvalidRequest, Message: "the range is too long for the interval: at most 31 days by hour, 3660 days by day"}
	}
	l, err := h.managedLink(c, c.Param("code"))
	if err != nil {
		return err
	}
	st, err := h.d.Stats.ClickStats(c.Request().Context(), l.ID, from, to, daily, topReferrers)
	if err != nil {
		return err
	}
	resp := statsResponse{
		Code: l.Code, From: from, To: to, Interval: "day", Total: st.Total,
		Series:    make([]statsBucket, 0, len(st.Series)),
		Referrers: make([]statsReferrer, 0, len(st.Referrers)),
		Agents:    statsAgents{Browser: st.Browsers, Bot: st.Bots},
		AsOf:      st.AsOf.UTC(),

		UniqueVisitors: st.Visitors,
		Countries:      nonNil(st.Dims[shortener.DimCountry]),
		Browsers:       nonNil(st.Dims[shortener.DimBrowser]),
		OS:             nonNil(st.Dims[shortener.DimOS]),
		Devices:        nonNil(st.Dims[shortener.DimDevice]),
	}
	if !daily {
		resp.Interval = "hour"
	}
	for _, b := range st.Series {
		resp.Series = append(resp.Series, statsBucket{Start: b.Start.UTC(), Clicks: b.Clicks, Visitors: b.Visitors})
	}
	for _, r := range st.Referrers {
		resp.Referrers = append(resp.Referrers, statsReferrer{Host: r.Host, Clicks: r.Clicks})
	}
	if csvOut {
		return statsCSV(c, resp, st.DayDims)
	}
	return c.JSON(http.StatusOK, resp)
}

// nonNil is m, or an empty map (so the JSON says {} rather than null).
func nonNil(m map[string]int64) map[string]int64 {
	if m == nil {
		return map[string]int64{}
	}
	return m
}

// statsCSV writes the stats as CSV, one count per row, so a spreadsheet
// pivots it as it likes:
//
//	start,dimension,value,clicks,visitors
//	2026-12-03T00:00:00Z,total,,1234,987
//	2026-12-03T00:00:00Z,country,US,700,
//
// a "total" row per bucket of the series (clicks and unique visitors),
// then a row per UTC day, dimension and value (dimensions are counted by
// day, whatever the interval).
func statsCSV(c echo.Context, resp statsResponse, days []shortener.DimCount) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	h.Set(echo.HeaderContentDisposition, fmt.Sprintf(`attachment; filename="%s-stats.csv"`, resp.Code))
	c.Response().WriteHeader(http.StatusOK)
	w := csv.NewWriter(c.Response())
	_ = w.Write([]string{"start", "dimension", "value", "clicks", "visitors"})
	for _, b := range resp.Series {
		_ = w.Write([]string{b.Start.Format(time.RFC3339), "total", "", strconv.FormatInt(b.Clicks, 10), strconv.FormatInt(b.Visitors, 10)})
	}
	for _, d := range days {
		_ = w.Write([]string{d.Day.Format(time.RFC3339), d.Dim, d.Value, strconv.FormatInt(d.Clicks, 10), ""})
	}
	w.Flush()
	return w.Error()
}

// parseStatsTime reads a from or to parameter: RFC 3339, or a date
// (YYYY-MM-DD, midnight UTC); def when absent.
func parseStatsTime(v string, def time.Time, name string) (time.Time, error) {
	if v == "" {
		return def, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Time{}, &Error{Code: CodeInvalidRequest, Message: name + " must be an RFC 3339 time or a date (YYYY-MM-DD)"}
}
