package handler

import (
	"cmp"
	"shortener"
	"slices"
	"time"

	"github.com/labstack/echo/v4"
)

// Stats page ranges: hourly for the last two days, daily for the last
// thirty.
const (
	statsHours = 48
	statsDays  = 30
)

// linkStats reads a link's clicks for the stats page, by hour over the
// last two days or by day over the last thirty.
func (h *Handler) linkStats(c echo.Context, l shortener.Link, interval string) (*statsView, string) {
	if h.d.Stats == nil {
		return nil, "Click statistics are not available on this server."
	}
	now := h.d.Now().UTC()
	step, n, daily := time.Hour, statsHours, false
	if interval == "day" {
		step, n, daily = 24*time.Hour, statsDays, true
	}
	to := now.Truncate(step).Add(step)
	from := to.Add(-time.Duration(n) * step)
	st, err := h.d.Stats.ClickStats(c.Request().Context(), l.ID, from, to, daily, topReferrers)
	if err != nil {
		h.log.Warn("stats page: read clicks", "code", l.Code, "err", err)
		return nil, "The click counts cannot be read right now; try again in a moment."
	}
	got := make([]point, 0, len(st.Series))
	for _, b := range st.Series {
		got = append(got, point{At: b.Start.UTC(), Clicks: b.Clicks})
	}
	v := &statsView{Total: st.Total, Interval: interval, Series: fillSeries(got, from, to, step), AsOf: st.AsOf}
	v.Chart = newChart(v.Series, interval)
	for _, r := range st.Referrers {
		v.Referrers = append(v.Referrers, share{Name: r.Host, Clicks: r.Clicks, Percent: percent(r.Clicks, st.Total)})
	}
	v.Agents = []share{
		{Name: "Browsers", Clicks: st.Browsers, Percent: percent(st.Browsers, st.Browsers+st.Bots)},
		{Name: "Bots", Clicks: st.Bots, Percent: percent(st.Bots, st.Browsers+st.Bots)},
	}
	v.Visitors = st.Visitors
	for _, d := range []struct{ id, title, column string }{
		{shortener.DimCountry, "Countries", "Country"}, {shortener.DimDevice, "Devices", "Device"},
		{shortener.DimBrowser, "Browsers", "Browser"}, {shortener.DimOS, "Operating systems", "OS"},
	} {
		v.Dims = append(v.Dims, dimView{ID: d.id, Title: d.title, Column: d.column, Rows: topShares(st.Dims[d.id], dimRows)})
	}
	return v, ""
}

// dimRows bounds a dimension's table on the stats page; the rest are
// summed into "other values".
const dimRows = 10

// topShares is counts as shares of their sum, most clicks first (ties by
// name), the top n and then the rest summed in one row.
func topShares(counts map[string]int64, n int) []share {
	var total int64
	rows := make([]share, 0, len(counts))
	for name, c := range counts {
		total += c
		rows = append(rows, share{Name: name, Clicks: c})
	}
	slices.SortFunc(rows, func(a, b share) int { return cmp.Or(cmp.Compare(b.Clicks, a.Clicks), cmp.Compare(a.Name, b.Name)) })
	if len(rows) > n {
		rest := share{Name: "other values"}
		for _, r := range rows[n:] {
			rest.Clicks += r.Clicks
		}
		rows = append(rows[:n], rest)
	}
	for i := range rows {
		rows[i].Percent = percent(rows[i].Clicks, total)
	}
	return rows
}

// percent is part of whole in whole percent, 0 when whole is 0.
func percent(part, whole int64) int {
	if whole == 0 {
		return 0
	}
	return int((part*100 + whole/2) / whole)
}
