package chaos

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"shortener/internal/tick"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The series a scrape keeps, by the key it stores them under. The names
// are the app's (docs/operations.md#metrics; what they mean: docs/lookup.md).
const (
	keyLookups   = "lookups"     // shortener_lookups_total
	keyHits      = "redis_hits"  // shortener_redis_lookups_total{result="hit"}, all roles
	keyFillsOK   = "fills_ok"    // shortener_redis_fills_total{result="ok"}
	keyFillsErr  = "fills_error" // shortener_redis_fills_total{result="error"}: Redis refused or failed the write
	keyMySQL     = "mysql"       // shortener_mysql_queries_total, all results
	keyState     = "state/"      // + breaker: shortener_breaker_state{breaker}
	keyTrans     = "transition/" // + breaker/from/to: shortener_breaker_transitions_total
	keyWaitOver  = "redis_over/" // + bucket bound in seconds: Redis lookups slower than it (shortener_redis_lookup_duration_seconds)
	keyStallOver = "stall_over/" // + bucket bound in seconds: stalls of the app longer than it (shortener_stall_seconds)
	keyDropped   = "dropped"     // shortener_clicks_dropped_total, all reasons
	keyDroppedBy = "dropped/"    // + reason: shortener_clicks_dropped_total{reason}
	keySetAside  = "set_aside/"  // + file: shortener_state_files_set_aside_total{file}
)

// bucketKey is the key of a histogram's count above bound (seconds),
// under prefix (keyWaitOver, keyStallOver).
func bucketKey(prefix string, bound float64) string {
	return prefix + strconv.FormatFloat(bound, 'g', -1, 64)
}

// App is an app instance whose /metrics a run scrapes directly, not
// through nginx, which would answer from either app.
type App struct {
	Name string
	URL  string // "http://127.0.0.1:8081"
}

// Sample is one scrape of one app.
type Sample struct {
	At  time.Duration // offset from the start of the load
	App string
	// Up is false when the scrape failed: the app was down or frozen.
	Up     bool
	Values map[string]float64
}

// startScraper scrapes each app's /metrics every interval, timing
// samples from start, until the stop it returns, which returns the
// samples in time order. The client should not share connections with
// the load's (its own transport), so a saturated load does not delay the
// evidence.
func startScraper(apps []App, interval time.Duration, start time.Time, client *http.Client) (stop func() []Sample) {
	var mu sync.Mutex
	var samples []Sample
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, a := range apps {
		scrape := func() {
			smp := Sample{At: time.Since(start), App: a.Name}
			sctx, cancel := context.WithTimeout(context.Background(), interval) // stop ends no scrape in flight
			if m, err := Scrape(sctx, client, a.URL); err == nil {
				smp.Up, smp.Values = true, m.keep()
			}
			cancel()
			mu.Lock()
			samples = append(samples, smp)
			mu.Unlock()
		}
		wg.Go(func() { scrape(); tick.Every(ctx, interval, scrape) })
	}
	return func() []Sample {
		cancel()
		wg.Wait()
		slices.SortStableFunc(samples, func(a, b Sample) int { return cmp.Compare(a.At, b.At) })
		return samples
	}
}

// Metrics is one scrape of an app's /metrics, by metric family.
type Metrics map[string]*dto.MetricFamily

// Scrape reads base's /metrics ("http://127.0.0.1:8081").
func Scrape(ctx context.Context, c *http.Client, base string) (Metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: status %d", base, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: parse: %w", base, err)
	}
	return Metrics(fams), nil
}

// Sum adds the values of every sample of name whose labels include each
// pair of labels: Sum("x_total", "result", "hit").
func (m Metrics) Sum(name string, labels ...string) float64 {
	var sum float64
	m.each(name, func(lbl model.Metric, v float64) {
		for i := 0; i+1 < len(labels); i += 2 {
			if string(lbl[model.LabelName(labels[i])]) != labels[i+1] {
				return
			}
		}
		sum += v
	})
	return sum
}

// each calls f with the labels and value of every sample of name.
func (m Metrics) each(name string, f func(labels model.Metric, v float64)) {
	if fam, ok := m[name]; ok {
		samples, _ := expfmt.ExtractSamples(&expfmt.DecodeOptions{}, fam)
		for _, s := range samples {
			f(s.Metric, float64(s.Value))
		}
	}
}

// keep returns the series a run reads, under the keys above.
func (m Metrics) keep() map[string]float64 {
	vals := map[string]float64{}
	for key, sum := range map[string][]string{ // name, then label pairs
		keyLookups:  {"shortener_lookups_total"},
		keyMySQL:    {"shortener_mysql_queries_total"},
		keyHits:     {"shortener_redis_lookups_total", "result", "hit"},
		keyFillsOK:  {"shortener_redis_fills_total", "result", "ok"},
		keyFillsErr: {"shortener_redis_fills_total", "result", "error"},
		keyDropped:  {"shortener_clicks_dropped_total"},
	} {
		vals[key] = m.Sum(sum[0], sum[1:]...)
	}
	m.each("shortener_breaker_state", func(l model.Metric, v float64) { vals[keyState+string(l["breaker"])] = v })
	m.each("shortener_clicks_dropped_total", func(l model.Metric, v float64) { vals[keyDroppedBy+string(l["reason"])] = v })
	m.each("shortener_state_files_set_aside_total", func(l model.Metric, v float64) { vals[keySetAside+string(l["file"])] = v })
	m.each("shortener_breaker_transitions_total", func(l model.Metric, v float64) {
		vals[keyTrans+string(l["breaker"]+"/"+l["from"]+"/"+l["to"])] = v
	})
	for name, prefix := range map[string]string{"shortener_redis_lookup_duration_seconds": keyWaitOver, "shortener_stall_seconds": keyStallOver} {
		for _, mt := range m[name].GetMetric() {
			h := mt.GetHistogram()
			for _, b := range h.GetBucket() {
				vals[bucketKey(prefix, b.GetUpperBound())] += float64(h.GetSampleCount() - b.GetCumulativeCount())
			}
		}
	}
	return vals
}

// Transition is a breaker changing state on one app, as seen between two
// scrapes: it happened at or shortly before At.
type Transition struct {
	At      time.Duration `json:"at_ns"`
	App     string        `json:"app"`
	Breaker string        `json:"breaker"`
	From    string        `json:"from"`
	To      string        `json:"to"`
	Count   int           `json:"count"`
}

// steps yields each scrape of app that answered, after the first, with the
// one that answered before it, in time order.
func steps(samples []Sample, app string) iter.Seq2[Sample, Sample] {
	return func(yield func(prev, cur Sample) bool) {
		var prev *Sample
		for i, s := range samples {
			if s.App != app || !s.Up {
				continue
			}
			if prev != nil && !yield(*prev, s) {
				return
			}
			prev = &samples[i]
		}
	}
}

// delta is how much a counter grew from prev to cur. A counter that went
// down belongs to a restarted app, whose counters began again at zero, so
// all of cur is growth.
func delta(prev, cur float64) float64 {
	if cur < prev {
		return cur
	}
	return cur - prev
}

// transitions lists every breaker transition the samples show, in time
// order.
func transitions(samples []Sample, apps []string) []Transition {
	var out []Transition
	for _, app := range apps {
		for prev, cur := range steps(samples, app) {
			for k, v := range cur.Values {
				parts := strings.Split(strings.TrimPrefix(k, keyTrans), "/") // breaker, from, to
				if d := delta(prev.Values[k], v); strings.HasPrefix(k, keyTrans) && len(parts) == 3 && d > 0 {
					out = append(out, Transition{At: cur.At, App: app, Breaker: parts[0], From: parts[1], To: parts[2], Count: int(d)})
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Transition) int {
		return cmp.Or(cmp.Compare(a.At, b.At), strings.Compare(a.App+a.Breaker, b.App+b.Breaker))
	})
	return out
}

// movedAfter returns how long after ref came the first scrape of app at
// which counter key had grown since the scrape before it, or nil if none
// did. The answer is at most one scrape interval late.
func movedAfter(samples []Sample, app, key string, ref time.Duration) *time.Duration {
	for prev, cur := range steps(samples, app) {
		if cur.At > ref && delta(prev.Values[key], cur.Values[key]) > 0 {
			return dur(cur.At - ref)
		}
	}
	return nil
}

// longestStall returns the longest stretch within w over which counter
// key did not grow on app: consecutive scrapes with equal values.
func longestStall(samples []Sample, app, key string, w Window) time.Duration {
	var longest, run time.Duration
	for prev, cur := range steps(samples, app) {
		switch {
		case cur.At < w.From || prev.At > w.To:
		case delta(prev.Values[key], cur.Values[key]) > 0:
			run = 0
		default:
			run += cur.At - prev.At
			longest = max(longest, run)
		}
	}
	return longest
}

// growth sums how much counter key grew on app over w, from the last
// scrape at or before w.From to the last scrape at or before w.To.
func growth(samples []Sample, app, key string, w Window) float64 {
	var sum float64
	for prev, cur := range steps(samples, app) {
		if cur.At > w.From && cur.At <= w.To {
			sum += delta(prev.Values[key], cur.Values[key])
		}
	}
	return sum
}

// BreakerState is one breaker's state on one app from At on: "closed",
// "open", "half-open", or "down" when the app did not answer the scrape.
type BreakerState struct {
	At      time.Duration `json:"at_ns"`
	App     string        `json:"app"`
	Breaker string        `json:"breaker"`
	State   string        `json:"state"`
}

// breakerStates lists each app's breaker states over time, one entry per
// change, from the shortener_breaker_state gauge (0 closed, 1 open, 2
// half-open).
func breakerStates(samples []Sample, apps, breakers []string) []BreakerState {
	var out []BreakerState
	for _, app := range apps {
		for _, b := range breakers {
			last := ""
			for _, s := range samples {
				if s.App != app {
					continue
				}
				st := "down"
				if s.Up {
					st = "unknown"
					if v := s.Values[keyState+b]; v >= 0 && v < 3 && v == math.Trunc(v) {
						st = []string{"closed", "open", "half-open"}[int(v)]
					}
				}
				if st != last {
					out = append(out, BreakerState{At: s.At, App: app, Breaker: b, State: st})
					last = st
				}
			}
		}
	}
	return out
}
