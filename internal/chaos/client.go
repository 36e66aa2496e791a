package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// Retry pacing of a create: the first retry waits retryBase, each later
// one twice as long, none longer than retryCap; a Retry-After header asks
// for longer, up to retryCap. The cap keeps a create's retries within a
// few seconds, so an outage shows as failed creates, not as a client that
// waits forever.
const (
	retryBase = 100 * time.Millisecond
	retryCap  = time.Second
)

// NewClient returns the HTTP client a load uses: it reports redirects
// instead of following them, so every Location can be checked, keeps
// enough idle connections for maxInFlight concurrent requests, and bounds
// each connect, because a black-holed port would otherwise hold a request
// until its overall timeout.
func NewClient(maxInFlight int) *http.Client {
	return &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        maxInFlight,
			MaxIdleConnsPerHost: maxInFlight,
			IdleConnTimeout:     30 * time.Second,
			DisableCompression:  true,
		},
	}
}

// classify turns a transport error into an outcome: a request that ran
// out of time has an unknown outcome (the server may still act on it);
// anything else (refused, reset, closed early) is a failure the client saw.
func classify(err error) Outcome {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return Unknown
	}
	return Failed
}

// answer is what the load reads of an HTTP answer.
type answer struct {
	status             int
	location, servedBy string
	// retryAfter is the Retry-After header's; replayed the app's
	// Idempotent-Replayed: the answer is that of an earlier POST.
	retryAfter time.Duration
	replayed   bool
	body       []byte // up to 64 KiB
}

// send makes one request, a GET or DELETE of url or, with a body, a
// create's POST (under Idempotency-Key key) or an edit's PATCH, and reads
// the answer. The body
// is read so that the connection is reused; an error while reading it is
// the request's error.
func send(ctx context.Context, c *http.Client, method, url, key string, body []byte, timeout time.Duration) (answer, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	req.Header.Set("User-Agent", person())
	resp, err := c.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	h := resp.Header
	a := answer{status: resp.StatusCode, location: h.Get("Location"), servedBy: h.Get("X-Served-By"),
		replayed: h.Get("Idempotent-Replayed") == "true"}
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil && s > 0 {
		a.retryAfter = time.Duration(s) * time.Second
	}
	if a.body, err = io.ReadAll(io.LimitReader(resp.Body, 64<<10)); err != nil {
		return a, fmt.Errorf("read body: %w", err)
	}
	return a, nil
}

// lookup resolves code through base and wants 302 to url or, for a code
// never issued (url ""), 404.
func lookup(ctx context.Context, c *http.Client, base, code, url string, timeout time.Duration, r *Result) {
	a, err := send(ctx, c, http.MethodGet, base+"/"+code, "", nil, timeout)
	r.Status, r.ServedBy = a.status, a.servedBy
	what, want := "GET", http.StatusFound
	if url == "" {
		what, want = "GET unknown code", http.StatusNotFound
	}
	switch {
	case err != nil:
		r.Outcome, r.Err = classify(err), fmt.Sprintf("%s: %v", what, err)
	case a.status == want && (url == "" || a.location == url):
		r.Outcome = OK
	case url != "" && a.status >= 300 && a.status < 400:
		r.Outcome, r.WrongLocation = Failed, true
		r.Err = fmt.Sprintf("GET: %d with Location %q, want %q", a.status, a.location, url)
	default:
		r.Outcome, r.Err = Failed, fmt.Sprintf("%s: %d%s, want %d", what, a.status, source(a.status, a.servedBy), want)
	}
}

// lookupAll looks every link up through base, as the load does, with a
// few workers and returns, by code, why one did not redirect to its URL
// ("" when it did).
func lookupAll(ctx context.Context, c *http.Client, base string, links []Link, timeout time.Duration) map[string]string {
	out := make(map[string]string, len(links))
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(8)
	for _, l := range links {
		g.Go(func() error {
			var res Result
			lookup(ctx, c, base, l.Code, l.URL, timeout, &res)
			mu.Lock()
			defer mu.Unlock()
			out[l.Code] = res.Err
			return nil
		})
	}
	g.Wait()
	return out
}

// source says who gave an error answer: an app names itself in
// X-Served-By; an answer without it is nginx's own (no app reached, or
// none left to try), which tells a proxy problem from an app problem.
func source(status int, servedBy string) string {
	switch {
	case status < 500 && status != http.StatusTooManyRequests:
		return ""
	case servedBy == "":
		return " from nginx (no X-Served-By)"
	default:
		return " from " + servedBy
	}
}

// retryable reports whether a create's answer means "try again with the
// same key": the request may not have reached an app, or the app could not
// reach its database. Any other answer is final.
func retryable(status int) bool {
	return status == http.StatusBadGateway || status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout
}

// create posts r.URL under r.Key, retrying with the same key on transport
// errors, timeouts and 502/503/504, up to attempts POSTs. Retrying after a
// timeout is what the key is for: the first POST may have been stored, and
// the retry must then return that link rather than make a second. A
// create without a key is retried all the same, as a client without one
// does: a retry after a POST that was stored unanswered makes a second
// link, which the creates account allows it.
func create(ctx context.Context, c *http.Client, base string, timeout time.Duration, attempts int, due time.Time, r *Result) {
	body, _ := json.Marshal(map[string]string{"url": r.URL})
	for attempt := 1; ; attempt++ {
		r.Attempts = attempt
		a, err := send(ctx, c, http.MethodPost, base+"/api/v1/links", r.Key, body, timeout)
		status := a.status
		var got struct{ Code, URL string } // of a 201, what the ledger needs
		if err == nil && status == http.StatusCreated {
			if err = json.Unmarshal(a.body, &got); err != nil {
				err = fmt.Errorf("decode 201: %w", err)
			}
		}
		if attempt == 1 {
			r.FirstAnswer, r.FirstStatus = time.Since(due), status
		}
		r.Status, r.ServedBy = status, a.servedBy
		switch {
		case err != nil:
			r.Outcome, r.Err = classify(err), fmt.Sprintf("POST: %v", err)
		case status == http.StatusCreated && got.Code != "" && got.URL == r.URL:
			r.Outcome, r.Code, r.Err, r.Replayed = OK, got.Code, "", a.replayed
			return
		case status == http.StatusCreated:
			// Stored, by the app's word, but not the link asked for: the
			// ledger must see it, so keep what the app answered.
			r.Outcome, r.Code = Failed, got.Code
			r.Err = fmt.Sprintf("POST: 201 with code %q URL %q, want URL %q", got.Code, got.URL, r.URL)
			return
		default:
			r.Outcome, r.Err = Failed, fmt.Sprintf("POST: %d%s", status, source(status, a.servedBy))
		}
		if attempt >= attempts || (err == nil && !retryable(status)) {
			return
		}
		if pause(ctx, min(max(retryBase<<(attempt-1), a.retryAfter), retryCap)) != nil {
			return
		}
	}
}

// persons is how many people the load stands for: each request is one of
// them, at random, as a browser of its own. Trending counts people, not
// requests (a client's repeats of a link within a minute count once, and
// bots not at all), so a load of one client would rank nothing; with this
// many, nearly every request is a person's first click on its link in
// its minute, and trending's truth stays the clicks the load received.
const persons = 1_000_000

// personAgents are the browsers the persons use, each a real browser's
// User-Agent that the analytics tell apart (desktop, phone, tablet;
// Chrome, Safari, Firefox, Edge), so the clicks account's dimension check
// sees every device class but bots.
var personAgents = []string{
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
	"Mozilla/5.0 (iPad; CPU OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
	"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
	"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
}

// person is the User-Agent of a random one of the load's persons: its
// browser's, and the person's number (so each person is a client of its
// own to trending).
func person() string {
	n := rand.IntN(persons)
	return personAgents[n%len(personAgents)] + " person/" + strconv.Itoa(n)
}
