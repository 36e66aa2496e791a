package handler

import (
	"strconv"
	"time"
)

// chartSVG is a bar chart of clicks over time, laid out on the server so
// the stats page needs no chart library and no script: the template draws
// each bar as an SVG rect. Sizes are in viewBox units; CSS scales it.
type chartSVG struct {
	Width, Height int
	Bars          []bar
	YTicks        []tick // horizontal grid lines with their value
	XTicks        []tick // time labels under the bars
	Summary       string // what the chart shows, for screen readers
}

// bar is one interval's clicks.
type bar struct {
	X, Y, W, H float64
	Label      string // "2026-12-03 14:00 UTC: 12 clicks", the bar's tooltip
}

// tick is a labelled position on an axis.
type tick struct {
	Pos   float64
	Label string
}

// Chart geometry, in viewBox units.
const (
	chartW      = 720
	chartH      = 240
	chartLeft   = 44 // room for the y labels
	chartBottom = 24 // room for the x labels
	chartTop    = 8
)

// newChart lays out one bar per point; interval is "hour" or "day".
func newChart(points []point, interval string) chartSVG {
	ch := chartSVG{Width: chartW, Height: chartH}
	var peak, total int64
	for _, p := range points {
		peak = max(peak, p.Clicks)
		total += p.Clicks
	}
	top := niceCeil(peak)
	plotW := float64(chartW - chartLeft - 4)
	plotH := float64(chartH - chartTop - chartBottom)
	for i := 0; i <= 4; i++ {
		v := top * int64(i) / 4
		ch.YTicks = append(ch.YTicks, tick{Pos: chartTop + plotH - plotH*float64(v)/float64(top), Label: strconv.FormatInt(v, 10)})
	}
	layout, labelLayout := "2006-01-02 15:04 UTC", "15:04"
	if interval == "day" {
		layout, labelLayout = "2006-01-02", "Jan 2"
	}
	if len(points) > 0 {
		step := plotW / float64(len(points))
		gap := min(step*0.2, 4)
		every := max(1, len(points)/6) // at most about 6 time labels
		for i, p := range points {
			h := plotH * float64(p.Clicks) / float64(top)
			x := chartLeft + step*float64(i)
			ch.Bars = append(ch.Bars, bar{X: x + gap/2, Y: chartTop + plotH - h, W: step - gap, H: h,
				Label: p.At.UTC().Format(layout) + ": " + plural(p.Clicks, "click")})
			if i%every == 0 {
				ch.XTicks = append(ch.XTicks, tick{Pos: x + step/2, Label: p.At.UTC().Format(labelLayout)})
			}
		}
		ch.Summary = "Clicks per " + interval + " from " + points[0].At.UTC().Format(layout) + " to " +
			points[len(points)-1].At.UTC().Format(layout) + ": " + plural(total, "click") + " in all, at most " +
			strconv.FormatInt(peak, 10) + " in one " + interval + "."
	}
	return ch
}

// niceCeil rounds n up to four times 1, 2 or 5 times a power of ten (4,
// 8, 20, 40, 80, 200, …), so the four grid steps fall on round numbers.
func niceCeil(n int64) int64 {
	if n <= 4 {
		return 4
	}
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if m*p*4 >= n {
				return m * p * 4
			}
		}
	}
}

// plural writes "1 click", "2 clicks".
func plural(n int64, word string) string {
	s := strconv.FormatInt(n, 10) + " " + word
	if n != 1 {
		s += "s"
	}
	return s
}

// fillSeries returns one point per interval from from to to (to
// excluded), taking counts from got and zero elsewhere, so gaps show.
func fillSeries(got []point, from, to time.Time, step time.Duration) []point {
	byTime := make(map[int64]int64, len(got))
	for _, p := range got {
		byTime[p.At.Truncate(step).Unix()] += p.Clicks
	}
	var out []point
	for t := from.Truncate(step); t.Before(to); t = t.Add(step) {
		out = append(out, point{At: t, Clicks: byTime[t.Unix()]})
	}
	return out
}
