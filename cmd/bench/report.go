package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// measure is what one load run reports (wrk's own summary).
type measure struct {
	Requests int64   `json:"requests"`
	Seconds  float64 `json:"seconds"`
	// RPS counts the answers below 400 per second: a 429 or a 503 is not
	// throughput.
	RPS float64 `json:"rps"`
	// Errors are socket errors and timeouts; BadStatus are answers of 400
	// or above (a 429 included).
	Errors    int64   `json:"errors"`
	BadStatus int64   `json:"bad_status"`
	P50ms     float64 `json:"p50_ms"`
	P99ms     float64 `json:"p99_ms"`
	MaxMs     float64 `json:"max_ms"`
	// CPUus is the CPU time the serving processes spent per answered
	// request, in microseconds (nginx's workers, the apps or the minimal
	// servers; not wrk). Unlike requests/s it barely moves when other work
	// crowds the machine, so it is the steadier reading of the ratios.
	CPUus float64 `json:"cpu_us_per_request"`
	// Parts is the CPU time per answered request of each part of the
	// system (processParts: nginx, apps, redis, sentinels, mysql), from
	// the start of the run until the apps had shipped its clicks and sent
	// its trending batches: where a request's work goes.
	Parts map[string]float64 `json:"cpu_us_by_process,omitempty"`
	// Folded is how many pending clicks (store/clickfold.go: the clicks
	// of links with few clicks in a shipped batch) the run left, which
	// the bench folded right after it; FoldCPUus is what folding them
	// cost MySQL and the bench's folding process, per answered request of
	// the run. The apps would fold them after the hour's end instead,
	// with every other click of their links that hour at once.
	Folded    int64   `json:"folded_clicks,omitempty"`
	FoldCPUus float64 `json:"fold_cpu_us_per_request,omitempty"`
	// Load1 is the machine's one-minute load average when the run ended:
	// the other work on the machine, which the numbers share it with.
	Load1 float64 `json:"load1"`
}

// rowResult is one row of the report over every round.
type rowResult struct {
	Name string    `json:"name"`
	What string    `json:"what"`
	Runs []measure `json:"runs"`
	// Median is the median of each field over the runs (errors summed).
	Median measure `json:"median"`
	// Floor is the row's target in requests/s, 0 for none.
	Floor float64 `json:"floor,omitempty"`
}

// ratioResult reads one row against another.
type ratioResult struct {
	Name string  `json:"name"`
	Num  string  `json:"num"`
	Den  string  `json:"den"`
	Min  float64 `json:"min"`
	// PerRound are num/den of the runs of the same round, which ran one
	// after the other; Value is their median, so a slow minute of the
	// shared machine moves one round's pair, not the headline.
	PerRound []float64 `json:"per_round"`
	Value    float64   `json:"value"`
	// CPU is the same reading by CPU time per request: den's over num's
	// (the minimal server's cost over the app's), median of the rounds.
	CPU float64 `json:"cpu"`
}

// memSample is an app's resident memory at a point of the run.
type memSample struct {
	When     string `json:"when"`
	App      string `json:"app"`
	RSSBytes uint64 `json:"rss_bytes"`
}

// report is everything make bench writes to docs/bench/.
type report struct {
	Started  time.Time         `json:"started"`
	Took     string            `json:"took"`
	Machine  machine           `json:"machine"`
	Settings map[string]string `json:"settings"`
	Rows     []rowResult       `json:"rows"`
	Ratios   []ratioResult     `json:"ratios"`
	Memory   []memSample       `json:"memory"`
	Notes    []string          `json:"notes"`
	// Previous is the run before this one, as its bench.json held it
	// (commit, start, every target's value), for the report's comparison:
	// a target is met when it is met in two full runs in a row.
	Previous *previousRun `json:"previous,omitempty"`
}

// previousRun is what the report keeps of the run before.
type previousRun struct {
	Started time.Time          `json:"started"`
	Commit  string             `json:"commit"`
	Targets map[string]float64 `json:"targets"`
}

// targets are the report's targets by name: each ratio's value and each
// floored row's median requests/s.
func (r *report) targets() map[string]float64 {
	out := map[string]float64{}
	for _, q := range r.Ratios {
		out[q.Name] = q.Value
	}
	for _, row := range r.Rows {
		if row.Floor > 0 {
			out["`"+row.Name+"` requests/s"] = row.Median.RPS
		}
	}
	return out
}

// readPrevious reads the bench.json an earlier run wrote into dir; none
// (or an unreadable one) is no previous run.
func readPrevious(dir string) *previousRun {
	b, err := os.ReadFile(filepath.Join(dir, "bench.json"))
	if err != nil {
		return nil
	}
	var old report
	if json.Unmarshal(b, &old) != nil {
		return nil
	}
	return &previousRun{Started: old.Started, Commit: old.Settings["commit"], Targets: old.targets()}
}

// median is the middle value of xs (the mean of the two middle ones for an
// even count), 0 for none. xs is not changed.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// medianOf is the median of one field of ms.
func medianOf(ms []measure, field func(measure) float64) float64 {
	xs := make([]float64, len(ms))
	for i, m := range ms {
		xs[i] = field(m)
	}
	return median(xs)
}

// summarise fills each row's Median and each ratio's PerRound and Value.
func (r *report) summarise() {
	byName := map[string]*rowResult{}
	for i := range r.Rows {
		row := &r.Rows[i]
		byName[row.Name] = row
		m := measure{
			RPS:       medianOf(row.Runs, func(m measure) float64 { return m.RPS }),
			P50ms:     medianOf(row.Runs, func(m measure) float64 { return m.P50ms }),
			P99ms:     medianOf(row.Runs, func(m measure) float64 { return m.P99ms }),
			MaxMs:     medianOf(row.Runs, func(m measure) float64 { return m.MaxMs }),
			CPUus:     medianOf(row.Runs, func(m measure) float64 { return m.CPUus }),
			Load1:     medianOf(row.Runs, func(m measure) float64 { return m.Load1 }),
			FoldCPUus: medianOf(row.Runs, func(m measure) float64 { return m.FoldCPUus }),
			Folded:    int64(medianOf(row.Runs, func(m measure) float64 { return float64(m.Folded) })),
		}
		for _, part := range processParts {
			if slices.ContainsFunc(row.Runs, func(m measure) bool { return m.Parts != nil }) {
				if m.Parts == nil {
					m.Parts = map[string]float64{}
				}
				m.Parts[part] = medianOf(row.Runs, func(m measure) float64 { return m.Parts[part] })
			}
		}
		for _, run := range row.Runs {
			m.Requests += run.Requests
			m.Seconds += run.Seconds
			m.Errors += run.Errors
			m.BadStatus += run.BadStatus
		}
		row.Median = m
	}
	for i := range r.Ratios {
		q := &r.Ratios[i]
		num, den := byName[q.Num], byName[q.Den]
		q.PerRound = nil
		if num == nil || den == nil {
			q.Value = 0
			continue
		}
		var cpu []float64
		for j := 0; j < len(num.Runs) && j < len(den.Runs); j++ {
			if den.Runs[j].RPS > 0 {
				q.PerRound = append(q.PerRound, num.Runs[j].RPS/den.Runs[j].RPS)
			}
			if num.Runs[j].CPUus > 0 {
				cpu = append(cpu, den.Runs[j].CPUus/num.Runs[j].CPUus)
			}
		}
		q.Value, q.CPU = median(q.PerRound), median(cpu)
	}
}

// verdict says whether a value meets its minimum, for the tables.
func verdict(value, min float64) string {
	switch {
	case min <= 0:
		return ""
	case value >= min:
		return "met"
	default:
		return "**missed**"
	}
}

// writeJSON writes r as indented JSON.
func (r *report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write report json: %w", err)
	}
	return nil
}

// writeMarkdown writes r for people: targets first, then every row, the
// memory, the machine and what the numbers share it with.
func (r *report) writeMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# make bench, %s\n\n", r.Started.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "Written by `make bench` (cmd/bench); the same figures are in `bench.json`. %d round(s), medians; took %s.\n\n",
		rounds(r.Rows), r.Took)
	if len(r.Ratios) > 0 || hasFloor(r.Rows) {
		b.WriteString("## Targets\n\n| target | value | minimum | per round | | by CPU per request |\n|---|---:|---:|---|---|---:|\n")
		for _, q := range r.Ratios {
			per := make([]string, len(q.PerRound))
			for i, v := range q.PerRound {
				per[i] = fmt.Sprintf("%.2f", v)
			}
			fmt.Fprintf(&b, "| %s (`%s` / `%s`) | %.2f | %.2f | %s | %s | %.2f |\n", q.Name, q.Num, q.Den, q.Value, q.Min, strings.Join(per, ", "), verdict(q.Value, q.Min), q.CPU)
		}
		for _, row := range r.Rows {
			if row.Floor > 0 {
				per := make([]string, len(row.Runs))
				for i, m := range row.Runs {
					per[i] = fmt.Sprintf("%.0f", m.RPS)
				}
				fmt.Fprintf(&b, "| `%s` requests/s | %.0f | %.0f | %s | %s | |\n", row.Name, row.Median.RPS, row.Floor, strings.Join(per, ", "), verdict(row.Median.RPS, row.Floor))
			}
		}
		b.WriteString("\n")
	}
	if p := r.Previous; p != nil && len(p.Targets) > 0 {
		fmt.Fprintf(&b, "## Against the previous run\n\nThe run before this one started %s (commit %s). A target holds when it is met in both; the change is how far a figure moved between two full runs.\n\n| target | previous | this run | change | minimum | both met |\n|---|---:|---:|---:|---:|---|\n",
			p.Started.UTC().Format("2006-01-02 15:04 UTC"), p.Commit)
		now := r.targets()
		mins := map[string]float64{}
		for _, q := range r.Ratios {
			mins[q.Name] = q.Min
		}
		for _, row := range r.Rows {
			if row.Floor > 0 {
				mins["`"+row.Name+"` requests/s"] = row.Floor
			}
		}
		names := make([]string, 0, len(now))
		for k := range now {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			prev, ok := p.Targets[k]
			if !ok || prev == 0 {
				continue
			}
			both := "no"
			if prev >= mins[k] && now[k] >= mins[k] {
				both = "yes"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %+.0f%% | %s | %s |\n", k, figure(prev), figure(now[k]), (now[k]/prev-1)*100, figure(mins[k]), both)
		}
		b.WriteString("\n")
	}
	b.WriteString("## Rows\n\n| row | what | requests/s (median) | per round | p50 ms | p99 ms | server CPU µs/request | errors | 4xx/5xx | load1 |\n|---|---|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range r.Rows {
		per := make([]string, len(row.Runs))
		for i, m := range row.Runs {
			per[i] = fmt.Sprintf("%.0f", m.RPS)
		}
		m := row.Median
		fmt.Fprintf(&b, "| `%s` | %s | %.0f | %s | %.2f | %.2f | %.1f | %d | %d | %.1f |\n",
			row.Name, row.What, m.RPS, strings.Join(per, ", "), m.P50ms, m.P99ms, m.CPUus, m.Errors, m.BadStatus, m.Load1)
	}
	if slices.ContainsFunc(r.Rows, func(r rowResult) bool { return r.Median.Parts != nil }) {
		b.WriteString("\n## CPU by process\n\nServer CPU µs per answered request, medians, from the start of each run until the apps had shipped its clicks and sent its trending batches (the stack's Redis, sentinels and MySQL count in every row, whichever apps the row loads). " +
			"The clicks of links clicked fewer than 4 times in a shipped batch wait pending until the apps fold them after their hour's end (store/clickfold.go); the bench folds each run's right after it, outside the run: " +
			"\"fold\" is what that cost MySQL and the folding process per answered request, a link's pending clicks of a few seconds folded together rather than its hour's (dearer per click: docs/bench/findings.md), and \"pending\" how many clicks it folded.\n\n| row | " +
			strings.Join(processParts, " | ") + " | total | fold | total with fold | pending |\n|---|" + strings.Repeat("---:|", len(processParts)+4) + "\n")
		for _, row := range r.Rows {
			if row.Median.Parts == nil {
				continue
			}
			fmt.Fprintf(&b, "| `%s` |", row.Name)
			total := 0.0
			for _, part := range processParts {
				total += row.Median.Parts[part]
				fmt.Fprintf(&b, " %.1f |", row.Median.Parts[part])
			}
			fmt.Fprintf(&b, " %.1f | %.1f | %.1f | %d |\n", total, row.Median.FoldCPUus, total+row.Median.FoldCPUus, row.Median.Folded)
		}
	}
	if len(r.Memory) > 0 {
		b.WriteString("\n## Memory\n\n| when | app | RSS MiB |\n|---|---|---:|\n")
		for _, s := range r.Memory {
			fmt.Fprintf(&b, "| %s | %s | %.1f |\n", s.When, s.App, float64(s.RSSBytes)/(1<<20))
		}
	}
	b.WriteString("\n## Machine\n\n")
	b.WriteString(r.Machine.markdown())
	if len(r.Settings) > 0 {
		b.WriteString("\n## Settings\n\n")
		keys := make([]string, 0, len(r.Settings))
		for k := range r.Settings {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "- %s: %s\n", k, r.Settings[k])
		}
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write report markdown: %w", err)
	}
	return nil
}

func rounds(rows []rowResult) int {
	n := 0
	for _, r := range rows {
		n = max(n, len(r.Runs))
	}
	return n
}

func hasFloor(rows []rowResult) bool {
	return slices.ContainsFunc(rows, func(r rowResult) bool { return r.Floor > 0 })
}

// figure prints a ratio with two decimals and a rate as a whole number.
func figure(v float64) string {
	if v < 100 {
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.0f", v)
}
