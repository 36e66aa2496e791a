package chaos

import (
	"cmp"
	"fmt"
	"html"
	"math"
	"slices"
	"strings"
	"time"
)

// The chart's geometry, in SVG pixels.
const (
	chartW     = 960
	chartLeft  = 78
	chartRight = 16
	plotW      = chartW - chartLeft - chartRight
	panelGap   = 34
	breakerRow = 13
)

// Colours of the chart: one per series, so the legend and the lines agree.
const (
	colSent    = "#9aa5b1"
	colOK      = "#2f9e44"
	colP50     = "#1c7ed6"
	colP99     = "#e8590c"
	colMax     = "#c2255c"
	colFailed  = "#e03131"
	colUnknown = "#7048e8"
	colFault   = "#ffe8cc"
)

// breakerFill is the colour of a breaker state.
func breakerFill(state string) string {
	fills := map[string]string{"closed": "#b2f2bb", "open": "#ff8787", "half-open": "#ffd43b", "down": "#ced4da"}
	return cmp.Or(fills[state], "#e9ecef")
}

// chart draws r as an SVG: throughput, latency (log scale), errors
// per second and each app's breaker states, all over the run's time, with
// the fault phase shaded and the run's events marked.
func (r *Report) chart() string {
	end := r.Phases[len(r.Phases)-1].Window.To
	secs := end.Seconds()
	x := func(d time.Duration) float64 { return chartLeft + plotW*d.Seconds()/secs }
	xs := func(s float64) float64 { return chartLeft + plotW*s/secs }

	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	var appOrder []string
	for _, s := range r.BreakerStates {
		if !slices.Contains(appOrder, s.App) {
			appOrder = append(appOrder, s.App)
		}
	}
	type panel struct {
		title  string
		top, h float64
	}
	panels := []panel{{"answers per second", 40, 150}, {"latency (log scale)", 0, 170},
		{"failed and unknown per second", 0, 90}, {"breakers (from /metrics)", 0, float64(2*len(appOrder)) * breakerRow}}
	for i := 1; i < len(panels); i++ {
		panels[i].top = panels[i-1].top + panels[i-1].h + panelGap
	}
	height := panels[3].top + panels[3].h + 58
	// The panels' scales: the busiest second's requests and errors, and
	// the slowest answer (at least the client timeout), with room above.
	peak, epeak := 1.0, 1.0
	lo, hi := 0.5, max(r.Settings.Timeout.Seconds()*1000*1.2, 10)
	for _, s := range r.Seconds {
		peak, epeak = max(peak, float64(s.Sent)), max(epeak, float64(s.Failed+s.Unknown))
		if s.Max > 0 {
			hi = max(hi, float64(s.Max)/1e6*1.2)
		}
	}

	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%.0f" viewBox="0 0 %d %.0f" font-family="sans-serif" font-size="11">`+"\n",
		chartW, height, chartW, height)
	p(`<rect width="100%%" height="100%%" fill="#fff"/>` + "\n")
	p(`<text x="%d" y="20" font-size="14" font-weight="bold">%s: %s</text>`+"\n", chartLeft, html.EscapeString(r.Scenario), html.EscapeString(r.Fault))
	verdict, vcol := "row holds", colOK
	if !r.Holds {
		verdict, vcol = "row does not hold", colFailed
	}
	p(`<text x="%d" y="20" font-size="12" text-anchor="end" fill="%s">%s</text>`+"\n", chartW-chartRight, vcol, verdict)

	fault := r.Phases[2].Window
	for _, pn := range panels {
		// The fault phase, shaded behind every panel.
		p(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x(fault.From), pn.top, x(fault.To)-x(fault.From), pn.h, colFault)
		p(`<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="none" stroke="#adb5bd"/>`+"\n", chartLeft, pn.top, plotW, pn.h)
		p(`<text x="%d" y="%.1f" font-weight="bold">%s</text>`+"\n", chartLeft, pn.top-5, pn.title)
	}

	// Throughput: what was due against what was answered as wanted. In
	// an open model the two lines part exactly where the service failed.
	th := panels[0]
	peak = niceCeil(peak * 1.1)
	yT := func(v float64) float64 { return th.top + th.h - th.h*v/peak }
	yTicks(&b, peak, tickCount(peak), yT, func(v float64) string { return fmt.Sprintf("%.0f/s", v) })
	polyline(&b, r.Seconds, xs, func(s Second) float64 { return yT(float64(s.Sent)) }, colSent, "3,2")
	polyline(&b, r.Seconds, xs, func(s Second) float64 { return yT(float64(s.Succeeded)) }, colOK, "")
	legend(&b, th.top, []string{"due (sent)", "answered as wanted"}, []string{colSent, colOK})

	// Latency, log scale from 0.5 ms to the client timeout: a p50 of one
	// millisecond and a stall of seconds must both be readable on one axis,
	// and the timeout line shows how close the slowest came to "unknown".
	lt := panels[1]
	yL := func(msv float64) float64 {
		msv = math.Min(math.Max(msv, lo), hi)
		return lt.top + lt.h - lt.h*(math.Log10(msv)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))
	}
	for _, v := range slices.DeleteFunc([]float64{1, 10, 100, 1000, 10000}, func(v float64) bool { return v < lo || v > hi }) {
		p(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e9ecef"/>`+"\n", chartLeft, chartLeft+plotW, yL(v), yL(v))
		p(`<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", chartLeft-4, yL(v)+4, ms(time.Duration(v*1e6)))
	}
	timeout := yL(float64(r.Settings.Timeout) / 1e6) // validated > 0
	p(`<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="2,3"/>`+"\n", chartLeft, chartLeft+plotW, timeout, timeout, colUnknown)
	p(`<text x="%d" y="%.1f" fill="%s">client timeout</text>`+"\n", chartLeft+4, timeout+12, colUnknown)
	lat := func(f func(Second) time.Duration) func(Second) float64 {
		return func(s Second) float64 { return yL(float64(f(s)) / 1e6) }
	}
	answered := slices.DeleteFunc(slices.Clone(r.Seconds), func(s Second) bool { return s.Max == 0 })
	polyline(&b, answered, xs, lat(func(s Second) time.Duration { return s.Max }), colMax, "1,2")
	polyline(&b, answered, xs, lat(func(s Second) time.Duration { return s.P99 }), colP99, "")
	polyline(&b, answered, xs, lat(func(s Second) time.Duration { return s.P50 }), colP50, "")
	legend(&b, lt.top, []string{"p50", "p99", "max"}, []string{colP50, colP99, colMax})

	// Errors per second, as bars: failed below unknown. Bars, not lines,
	// because a single failed request in a second must be visible, and a
	// line from 0 to 1 and back reads as noise.
	et := panels[2]
	epeak = niceCeil(epeak)
	yE := func(v float64) float64 { return et.top + et.h - et.h*v/epeak }
	yTicks(&b, epeak, min(2, int(epeak)), yE, func(v float64) string { return fmt.Sprintf("%.0f/s", v) })
	bw := math.Max(plotW/secs-1, 1)
	bar := func(s Second, from, to int, colour string) { // a bar from from to to requests
		if to > from {
			p(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", xs(float64(s.T)), yE(float64(to)), bw, yE(float64(from))-yE(float64(to)), colour)
		}
	}
	for _, s := range r.Seconds {
		bar(s, 0, s.Failed, colFailed)
		bar(s, s.Failed, s.Failed+s.Unknown, colUnknown)
	}
	if total := r.Total.All.Failed + r.Total.All.Unknown; total == 0 {
		p(`<text x="%.1f" y="%.1f" text-anchor="middle" fill="%s">no failed or unknown request</text>`+"\n", float64(chartLeft)+plotW/2.0, et.top+et.h/2+4, colOK)
	}
	legend(&b, et.top, []string{"failed", "unknown (timed out or not sent)"}, []string{colFailed, colUnknown})

	// Breaker states: one row per app and breaker, coloured by state, so
	// the reader sees which tier each app was using while the latency and
	// error panels above moved (or did not). Grey is a failed scrape: the
	// app was down or frozen.
	bt := panels[3]
	for i, app := range appOrder {
		for j, br := range []string{"read", "write"} {
			y := bt.top + float64(2*i+j)*breakerRow
			p(`<text x="%d" y="%.1f" text-anchor="end">%s %s</text>`+"\n", chartLeft-4, y+breakerRow-3, html.EscapeString(app), br)
			states := slices.DeleteFunc(slices.Clone(r.BreakerStates), func(s BreakerState) bool { return s.App != app || s.Breaker != br })
			for k, s := range states {
				to := end
				if k+1 < len(states) {
					to = states[k+1].At
				}
				p(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"><title>%s %s: %s</title></rect>`+"\n",
					x(s.At), y+1, math.Max(x(to)-x(s.At), 0.5), breakerRow-2, breakerFill(s.State), html.EscapeString(app), br, s.State)
			}
		}
	}
	legend(&b, bt.top, []string{"closed", "open", "half-open", "app down"},
		[]string{breakerFill("closed"), breakerFill("open"), breakerFill("half-open"), breakerFill("down")})

	// Events: a numbered tick across all panels; the Markdown's timeline
	// has the same events in order.
	last := panels[3]
	for i, e := range r.Events {
		ex := x(e.At)
		p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#495057" stroke-dasharray="2,3"><title>%s</title></line>`+"\n",
			ex, ex, panels[0].top, last.top+last.h, html.EscapeString(e.Text))
		p(`<text x="%.1f" y="%.1f" text-anchor="middle" font-size="9" fill="#495057">%d<title>%s</title></text>`+"\n",
			ex, panels[0].top+10+float64(i%3)*10, i+1, html.EscapeString(e.Text))
	}

	// Time axis.
	axisY := last.top + last.h
	step := math.Max(niceCeil(secs/10), 1)
	for t := 0.0; t <= secs+1e-9; t += step {
		p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#868e96"/>`+"\n", xs(t), xs(t), axisY, axisY+4)
		p(`<text x="%.1f" y="%.1f" text-anchor="middle">%.0f s</text>`+"\n", xs(t), axisY+16, t)
	}
	p(`<text x="%d" y="%.1f" fill="#495057">shaded: fault phase (%.1f s to %.1f s); numbered lines: events of the timeline, in order</text>`+"\n",
		chartLeft, axisY+34, fault.From.Seconds(), fault.To.Seconds())
	p("</svg>\n")
	return b.String()
}

// polyline draws the seconds as a line through their middles.
func polyline(b *strings.Builder, secs []Second, xs func(float64) float64, y func(Second) float64, colour, dash string) {
	pts := make([]string, len(secs))
	for i, s := range secs {
		pts[i] = fmt.Sprintf("%.1f,%.1f", xs(float64(s.T)+0.5), y(s))
	}
	d := ""
	if dash != "" {
		d = fmt.Sprintf(` stroke-dasharray="%s"`, dash)
	}
	fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.5"%s points="%s"/>`+"\n", colour, d, strings.Join(pts, " "))
}

// legend draws coloured labels right-aligned above a panel.
func legend(b *strings.Builder, top float64, labels, colours []string) {
	xr := float64(chartW - chartRight)
	for i := len(labels) - 1; i >= 0; i-- {
		w := 7*float64(len(labels[i])) + 18
		xr -= w
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="10" height="10" fill="%s"/><text x="%.1f" y="%.1f">%s</text>`+"\n",
			xr, top-14, colours[i], xr+13, top-5, html.EscapeString(labels[i]))
	}
}

// yTicks draws n+1 horizontal grid lines from 0 to peak.
func yTicks(b *strings.Builder, peak float64, n int, y func(float64) float64, label func(float64) string) {
	for i := 0; i <= n; i++ {
		v := peak * float64(i) / float64(n)
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e9ecef"/>`+"\n", chartLeft, chartLeft+plotW, y(v), y(v))
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", chartLeft-4, y(v)+4, label(v))
	}
}

// niceCeil rounds v (> 0: a count of at least 1, or a run's seconds) up to
// 1, 1.5, 2, 2.5 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.5, 2, 2.5, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// tickCount picks how many steps divide 0..peak into round numbers.
func tickCount(peak float64) int {
	for _, n := range []int{4, 5, 3, 2} {
		step := peak / float64(n)
		if step == math.Trunc(step) && niceCeil(step) == step {
			return n
		}
	}
	return 4
}
