package e2e

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"shortener/internal/poll"
	"shortener/internal/stack"
)

// The abuse suite: what one hostile client does to the public surfaces
// of a whole stack (nginx, two apps, Redis, MariaDB), each client from a
// loopback address of its own (all of 127.0.0.0/8 is loopback; 127.0.0.1
// is the stack's own load generator, exempt from the per-address limits).
// Each figure docs/abuse.md quotes is logged.

// browserFrom is a client whose connections come from src, with a
// browser's User-Agent, that does not follow redirects.
func browserFrom(src string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	return &http.Client{
		Timeout:       10 * time.Second,
		Transport:     &browserAgent{&http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 4}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type browserAgent struct{ next http.RoundTripper }

func (b *browserAgent) RoundTrip(r *http.Request) (*http.Response, error) {
	r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
	return b.next.RoundTrip(r)
}

// get makes one GET and returns its status (0 on a transport error).
func get(c *http.Client, url string) int {
	resp, err := c.Get(url)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// createLink makes an anonymous link through nginx and returns its code.
func createLink(tb testing.TB, base, url string) string {
	tb.Helper()
	resp, err := http.Post(base+"/api/v1/links", "application/json", strings.NewReader(`{"url":"`+url+`"}`))
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var l struct{ Code string }
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil || resp.StatusCode != http.StatusCreated {
		tb.Fatalf("create %s: %d %v", url, resp.StatusCode, err)
	}
	return l.Code
}

// comSelect reads MariaDB's count of SELECT statements run.
func comSelect(tb testing.TB, db *sql.DB) int64 {
	tb.Helper()
	var name string
	var n int64
	if err := db.QueryRow("SHOW GLOBAL STATUS LIKE 'Com_select'").Scan(&name, &n); err != nil {
		tb.Fatal(err)
	}
	return n
}

func TestAbuse(t *testing.T) {
	s := startFullStack(t)
	base := s.BaseURL()
	db, err := sql.Open("mysql", s.MySQLDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	crowd := createLink(t, base, "https://example.com/crowd")
	spam := createLink(t, base, "https://phish.example/login")

	t.Run("one client is not a trend", func(t *testing.T) { oneClientIsNotATrend(t, base, crowd, spam) })
	t.Run("preview flood", func(t *testing.T) { previewFlood(t, base, db, crowd) })
	t.Run("forged headers", func(t *testing.T) { forgedHeaders(t, s, db, crowd) })
}

// oneClientIsNotATrend: 150 people (150 addresses) follow one link twice
// each, one script (one address) follows another 1,500 times: the
// crowd's link is listed first, the script's not at all (below the
// threshold of distinct clients), and the list names hosts, not URLs.
func oneClientIsNotATrend(t *testing.T, base, crowd, spam string) {
	script := browserFrom("127.0.2.1")
	limited := 0
	for range 1500 {
		if get(script, base+"/"+spam) == http.StatusTooManyRequests {
			limited++
		}
	}
	for p := range 150 {
		c := browserFrom(fmt.Sprintf("127.0.1.%d", p+1))
		for range 2 {
			if got := get(c, base+"/"+crowd); got != http.StatusFound {
				t.Fatalf("person %d following the crowd's link: %d", p, got)
			}
		}
	}
	t.Logf("the script's 1,500 redirects: %d refused by nginx's per-address limit (429)", limited)
	type answer struct {
		Links []struct {
			Code, Host string
			URL        string `json:"url"`
			Clicks     int
		}
	}
	var a answer
	poll.Until(t, crowd+" first in trending", func() error {
		resp, err := http.Get(base + "/api/v1/trending?window=5m&limit=10")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		a = answer{}
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
			return err
		}
		if len(a.Links) == 0 || a.Links[0].Code != crowd || a.Links[0].Clicks < 150 {
			return fmt.Errorf("trending lists %+v, want %s first with at least 150", a.Links, crowd)
		}
		return nil
	})
	for _, l := range a.Links {
		if l.Code == spam {
			t.Errorf("the script's link is listed (%d clicks), want it below the threshold", l.Clicks)
		}
		if l.URL != "" || l.Host == "" {
			t.Errorf("trending names %q (host %q): want the host only", l.URL, l.Host)
		}
	}
	t.Logf("trending 5m: %+v", a.Links)
}

// previewFlood: 2,000 anonymous previews from one address, half of them
// of codes that do not exist (each a new one): MySQL runs no more SELECTs
// than in an idle window of the same length, plus at most one per
// unknown-code preview nginx let through (known codes cost none: they
// come from the lookup path's caches), and nginx refuses most of the
// flood.
func previewFlood(t *testing.T, base string, db *sql.DB, known string) {
	c := browserFrom("127.0.3.1")
	get(c, base+"/"+known+"+") // warm the caches, as a real link is
	start, before := time.Now(), comSelect(t, db)
	status := map[string]map[int]int{"known": {}, "unknown": {}}
	for i := range 2000 {
		if i%2 == 0 {
			status["known"][get(c, base+"/"+known+"+")]++
			continue
		}
		code := fmt.Sprintf("Zz%09d", rand.IntN(1e9))
		status["unknown"][get(c, base+"/"+code+"+")]++
	}
	flood, during := time.Since(start), comSelect(t, db)-before
	// The idle window: the same length, nothing sent.
	idleFrom := comSelect(t, db)
	time.Sleep(flood) // measuring a window, not waiting for anything
	idle := comSelect(t, db) - idleFrom
	passedUnknown := status["unknown"][http.StatusNotFound]
	t.Logf("preview flood in %s: known %v, unknown %v; MySQL SELECTs %d during the flood, %d in an idle window as long",
		flood.Round(time.Millisecond), status["known"], status["unknown"], during, idle)
	if extra := during - idle; extra > int64(passedUnknown)+10 {
		t.Errorf("the flood cost MySQL %d more SELECTs than idle, want at most one per unknown preview let through (%d) plus 10", extra, passedUnknown)
	}
	if status["unknown"][http.StatusTooManyRequests]+status["known"][http.StatusTooManyRequests] < 1000 {
		t.Errorf("nginx refused %d of 2,000 previews from one address, want most of them", status["unknown"][http.StatusTooManyRequests]+status["known"][http.StatusTooManyRequests])
	}
}

// forgedHeaders: a client that reaches an app directly (not through
// nginx) and names its own X-Real-IP and X-Click-Id (year 9999) changes
// nothing: each redirect counts as a click of its own, and no request set
// claims its time (a year-9999 set was never purged, and every batch of
// every instance read it under the global lock).
func forgedHeaders(t *testing.T, s *stack.Stack, db *sql.DB, code string) {
	app := "http://" + s.Apps()[0].Addr()
	c := browserFrom("127.0.4.1")
	for range 3 {
		req, _ := http.NewRequest(http.MethodGet, app+"/"+code, nil)
		req.Header.Set("X-Click-Id", "253402300799.000-00000000000000000000000000000abc") // year 9999
		req.Header.Set("X-Real-IP", "203.0.113.7")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound {
			t.Fatalf("forged redirect: %d", resp.StatusCode)
		}
	}
	// Wait until the journals have shipped what they held, then look.
	ctx := t.Context()
	var future int64
	var clicks int64
	poll.Until(t, "the journals to ship the clicks", func() error {
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM click_request_sets WHERE requested_to > ?", time.Now().Add(time.Hour).UnixMilli()).Scan(&future); err != nil {
			return err
		}
		if err := db.QueryRowContext(ctx, `SELECT COALESCE((SELECT SUM(h.clicks) FROM click_hours h WHERE h.link_id = l.id), 0)
			+ (SELECT COUNT(*) FROM click_pending p WHERE p.link_id = l.id) FROM links l WHERE l.code = ?`, code).Scan(&clicks); err != nil {
			return err
		}
		if clicks < 300+3 { // the crowd's 300 and these three, each its own
			return fmt.Errorf("%d clicks stored for %s, want 303", clicks, code)
		}
		return nil
	})
	if future != 0 || clicks != 303 {
		t.Errorf("after three forged redirects: %d request sets in the future, %d clicks; want 0 and 303 (each forged redirect its own click)", future, clicks)
	}
}
