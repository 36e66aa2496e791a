package handler

import (
	"strings"
	"testing"
	"time"
)

func TestNiceCeil(t *testing.T) {
	for _, tc := range []struct{ n, want int64 }{
		{0, 4}, {1, 4}, {4, 4}, {5, 8}, {8, 8}, {9, 20}, {20, 20}, {21, 40}, {79, 80}, {81, 200}, {1234, 2000}, {2001, 4000},
	} {
		if got := niceCeil(tc.n); got != tc.want {
			t.Errorf("niceCeil(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

func TestChart(t *testing.T) {
	from := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	series := fillSeries([]point{{At: from.Add(2 * time.Hour), Clicks: 6}, {At: from.Add(3*time.Hour + 10*time.Minute), Clicks: 2}},
		from, from.Add(6*time.Hour), time.Hour)
	if len(series) != 6 || series[2].Clicks != 6 || series[3].Clicks != 2 || series[0].Clicks != 0 {
		t.Fatalf("series %+v", series)
	}
	ch := newChart(series, "hour")
	if len(ch.Bars) != 6 {
		t.Fatalf("%d bars, want 6", len(ch.Bars))
	}
	// The tallest bar (6 of a scale of 8) is three quarters of the plot.
	plotH := float64(chartH - chartTop - chartBottom)
	if got := ch.Bars[2].H; got != plotH*6/8 {
		t.Errorf("bar of 6 clicks is %.1f high, want %.1f", got, plotH*6/8)
	}
	if ch.Bars[0].H != 0 || ch.Bars[2].Y+ch.Bars[2].H != chartTop+plotH {
		t.Errorf("bars do not stand on the axis: %+v", ch.Bars[:3])
	}
	if ch.YTicks[4].Label != "8" || ch.Bars[2].Label != "2026-12-03 02:00 UTC: 6 clicks" {
		t.Errorf("top tick %q, bar label %q", ch.YTicks[4].Label, ch.Bars[2].Label)
	}
	if !strings.Contains(ch.Summary, "8 clicks in all, at most 6 in one hour") {
		t.Errorf("summary %q", ch.Summary)
	}
}
