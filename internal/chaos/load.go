package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Kind is what a request does.
type Kind uint8

// The kinds of request a load sends.
const (
	// Redirect is GET /{code} of a pre-created link, chosen by Zipf's law;
	// it succeeds with 302 and the link's URL in Location.
	Redirect Kind = iota
	// Create is POST /api/v1/links with a fresh URL; it succeeds with
	// 201. Every other create has an Idempotency-Key of its own and is
	// retried with it; the others have none, as most clients send, and
	// go into MySQL with the creates beside them (store/creates.go),
	// retried as a new create.
	Create
	// Miss is GET /{code} of a code that was never issued, a lookup no
	// cache can answer; it succeeds with 404. While MySQL is down it gets
	// 503, which docs/design.md expects, so misses are reported apart.
	Miss
)

func (k Kind) String() string { return nameOf(k, "kind", "redirect", "create", "miss") }

// nameOf returns names[v], or what(v) for a value without a name.
func nameOf[T ~uint8](v T, what string, names ...string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", what, v)
}

// Outcome is how a request ended, from the client's point of view.
type Outcome uint8

// The outcomes of a request.
const (
	// OK is the answer the request wanted.
	OK Outcome = iota
	// Failed is a wrong answer, or an error the client saw at once (a
	// refused or reset connection).
	Failed
	// Unknown is no answer: timed out, or never sent because the in-flight
	// bound was reached. A create whose outcome is unknown may or may not
	// have been stored; the ledger checks either way.
	Unknown
)

func (o Outcome) String() string { return nameOf(o, "outcome", "ok", "failed", "unknown") }

// Result is one request of a load.
type Result struct {
	Seq  int
	Kind Kind
	// Intended is when the request was due, as an offset from the start of
	// the load; Latency runs from then until its final answer (after any
	// retries), so time spent waiting to be sent is latency too.
	Intended time.Duration
	Latency  time.Duration
	Outcome  Outcome
	// Dropped marks a request not sent because MaxInFlight requests were
	// already waiting; its Outcome is Unknown.
	Dropped  bool
	Status   int    // HTTP status of the final answer; 0 without one
	ServedBy string // X-Served-By of the final answer
	Err      string // why it failed or is unknown
	// WrongLocation marks a redirect answered 3xx with another Location
	// than its link's: the worst answer a shortener can give.
	WrongLocation bool

	Link int // Redirect: index of the link in LoadConfig.Links

	// Create only.
	URL, Key, Code string        // URL sent, Idempotency-Key ("" for none), code answered
	Attempts       int           // POSTs sent, retries included
	Replayed       bool          // the 201 replayed an earlier POST's answer (Idempotent-Replayed)
	FirstAnswer    time.Duration // from Intended to the first attempt's answer or error
	FirstStatus    int           // the first attempt's status; 0 without an answer
}

// Link is a short link the load redirects to.
type Link struct {
	Code string `json:"code"`
	URL  string `json:"url"`
}

// Traffic is the shape of a load: its rate, its mix of requests and the
// patience of its client. Config and LoadConfig share it.
type Traffic struct {
	// Rate is the constant arrival rate, requests per second, of all kinds.
	Rate float64
	// CreateShare and MissShare are the shares of requests that are
	// creates and misses; the rest are redirects.
	CreateShare, MissShare float64
	// Zipf is the exponent s (> 1) of the link popularity: link i is
	// requested in proportion to 1/(1+i)^s.
	Zipf float64
	// Timeout bounds each HTTP request; one that takes longer is Unknown.
	Timeout time.Duration
	// MaxInFlight bounds the requests waiting for an answer; a request due
	// while that many wait is not sent and counts as Unknown (Dropped).
	MaxInFlight int
	// CreateAttempts bounds the POSTs of one create, first one included.
	CreateAttempts int
}

// LoadConfig says what load to send.
type LoadConfig struct {
	Traffic
	// BaseURL is nginx's address, "http://127.0.0.1:8080".
	BaseURL string
	// Links are the pre-created links redirects go to, most popular first.
	Links []Link
	// Prefix makes created URLs and Idempotency-Keys unique to this load
	// (run ID and scenario), so the ledger can find them in MySQL.
	Prefix string
	// Seed seeds the choice of request kinds and links.
	Seed uint64
}

func (c LoadConfig) validate() error {
	switch {
	case c.BaseURL == "":
		return errors.New("no base URL")
	case c.Rate <= 0:
		return fmt.Errorf("rate %v: want > 0", c.Rate)
	case c.CreateShare < 0 || c.MissShare < 0 || c.CreateShare+c.MissShare > 1:
		return fmt.Errorf("create share %v and miss share %v: want each >= 0 and together <= 1", c.CreateShare, c.MissShare)
	case c.Zipf <= 1:
		return fmt.Errorf("zipf exponent %v: want > 1", c.Zipf)
	case len(c.Links) < 2 && c.CreateShare+c.MissShare < 1:
		return fmt.Errorf("%d links: redirects need at least 2", len(c.Links))
	case c.Timeout <= 0 || c.MaxInFlight <= 0 || c.CreateAttempts <= 0:
		return errors.New("timeout, max in-flight and create attempts must be > 0")
	case c.Prefix == "":
		return errors.New("no prefix")
	}
	return nil
}

// Load is an open-model load in progress: requests are due at a constant
// rate whatever the server does, as real users arrive whether or not the
// last one was served (see "The pacer" in the package comment).
type Load struct {
	ctx    context.Context
	cfg    LoadConfig
	client *http.Client
	start  time.Time
	stop   context.CancelFunc // ends the pacer's context, not ctx
	wg     sync.WaitGroup     // the pacer and the requests it sent
	slots  chan struct{}      // a token per request in flight, up to MaxInFlight

	mu sync.Mutex
	// results are kept in blocks of resultBlock. One slice appended to
	// for a whole run copied megabytes under mu, and allocated them, at
	// each growth: the latency blips at the same run-relative seconds
	// in every scenario (docs/chaos finding 11).
	results  [][]Result
	recent   tally // what completed since the last tick
	lastSeen map[string]time.Time
}

// StartLoad starts sending cfg's load with client, which must not follow
// redirects, and returns at once. The load runs until Stop; ending ctx
// ends the requests in flight too (they count as unknown), so it is the
// run's context, not one that Stop's caller cancels.
func StartLoad(ctx context.Context, cfg LoadConfig, client *http.Client) (*Load, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("start load: %w", err)
	}
	pacing, stop := context.WithCancel(context.Background())
	l := &Load{
		ctx:      ctx,
		cfg:      cfg,
		client:   client,
		start:    time.Now(),
		stop:     stop,
		slots:    make(chan struct{}, cfg.MaxInFlight),
		lastSeen: map[string]time.Time{},
	}
	l.wg.Go(func() { l.pace(pacing) }) // counted itself, it never adds a request to a zero count
	return l, nil
}

// Start returns when the load began; Result.Intended is relative to it.
func (l *Load) Start() time.Time { return l.start }

// pace dispatches request i at start + i/Rate. When it falls behind (a
// busy machine, a GC pause) it sends the overdue requests at once with
// their original intended times, so the delay is charged to their latency.
func (l *Load) pace(pacing context.Context) {
	rng := rand.New(rand.NewPCG(l.cfg.Seed, 0x5eed))
	var zipf *rand.Zipf
	if len(l.cfg.Links) >= 2 {
		zipf = rand.NewZipf(rng, l.cfg.Zipf, 1, uint64(len(l.cfg.Links)-1))
	}
	for i := 0; ; i++ {
		intended := time.Duration(float64(i) * float64(time.Second) / l.cfg.Rate)
		// An overdue request's pause ends at once, perhaps before a stop
		// it raced with: Err sees that.
		if pause(pacing, time.Until(l.start.Add(intended))) != nil || pacing.Err() != nil {
			return
		}
		r := Result{Seq: i, Intended: intended, Link: -1}
		switch x := rng.Float64(); {
		case x < l.cfg.CreateShare:
			r.Kind = Create
			r.URL = fmt.Sprintf("https://chaos.example/%s/%d", l.cfg.Prefix, i)
			if i%2 == 0 {
				r.Key = fmt.Sprintf("%s-%d", l.cfg.Prefix, i)
			}
		case x < l.cfg.CreateShare+l.cfg.MissShare:
			r.Kind = Miss
		default:
			r.Kind = Redirect
			r.Link = int(zipf.Uint64())
		}
		select {
		case l.slots <- struct{}{}:
		default:
			r.Outcome, r.Dropped = Unknown, true
			r.Err = fmt.Sprintf("not sent: %d requests in flight", l.cfg.MaxInFlight)
			l.record(r, time.Now())
			continue
		}
		l.wg.Go(func() {
			defer func() { <-l.slots }()
			l.send(&r)
			l.record(r, time.Now())
		})
	}
}

// send makes request r and fills in its outcome.
func (l *Load) send(r *Result) {
	due := l.start.Add(r.Intended)
	switch r.Kind {
	case Redirect:
		link := l.cfg.Links[r.Link]
		lookup(l.ctx, l.client, l.cfg.BaseURL, link.Code, link.URL, l.cfg.Timeout, r)
	case Miss:
		lookup(l.ctx, l.client, l.cfg.BaseURL, fmt.Sprintf("chaos-miss-%s-%d", l.cfg.Prefix, r.Seq), "", l.cfg.Timeout, r)
	case Create:
		create(l.ctx, l.client, l.cfg.BaseURL, l.cfg.Timeout, l.cfg.CreateAttempts, due, r)
	}
	r.Latency = time.Since(due)
}

// resultBlock is how many results a block of Load.results holds: a
// second or two of load.
const resultBlock = 2048

// record stores r, which completed at now.
func (l *Load) record(r Result, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.results); n == 0 || len(l.results[n-1]) == resultBlock {
		l.results = append(l.results, make([]Result, 0, resultBlock))
	}
	last := &l.results[len(l.results)-1]
	*last = append(*last, r)
	l.recent.add(r)
	if r.ServedBy != "" && r.Status > 0 && r.Status < 500 {
		l.lastSeen[r.ServedBy] = now
	}
}

// LastServed returns when app last answered a request of this load with a
// status below 500, or the zero time if it never did. Scenarios use it to
// see an app serving through nginx again after a restart.
func (l *Load) LastServed(app string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastSeen[app]
}

// tick returns the live line's figures of what completed since the
// previous call, and starts anew: answers, errors, p99 and requests in
// flight.
func (l *Load) tick() string {
	l.mu.Lock()
	t := l.recent
	l.recent = tally{}
	l.mu.Unlock()
	return fmt.Sprintf("%5d/s ok  %4d failed  %4d unknown  p99 %8s  in flight %d",
		t.Succeeded, t.Failed, t.Unknown, t.stats().Latency.P99.Round(100*time.Microsecond), len(l.slots))
}

// Stop stops sending, waits for the requests in flight (each is bounded by
// its timeouts), and returns every result in order of intended send time.
// It returns early with what it has if ctx ends first.
func (l *Load) Stop(ctx context.Context) ([]Result, error) {
	l.stop()
	waited := make(chan struct{})
	go func() { l.wg.Wait(); close(waited) }()
	var err error
	select {
	case <-waited:
	case <-ctx.Done():
		err = fmt.Errorf("stop load: %d requests still in flight: %w", len(l.slots), ctx.Err())
	}
	l.mu.Lock()
	out := slices.Concat(l.results...)
	l.mu.Unlock()
	slices.SortFunc(out, func(a, b Result) int { return a.Seq - b.Seq })
	return out, err
}
