package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shortener/stack"
	"shortener/store"
)

// TestClicksSurviveAppKill: while clients follow links through nginx,
// app1 is SIGKILLed with clicks in flight and restarted. Once the
// journals have shipped, every code has exactly as many clicks in MySQL
// as redirects the clients received: none lost (journaled before the
// answer), none doubled (the restarted app ships from the recorded
// positions).
func TestClicksSurviveAppKill(t *testing.T) {
	s := startFullStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	base := s.BaseURL()
	c := newClient()
	links := byCode(createLinks(t, c, base, 20))
	codes := make([]string, 0, len(links))
	for code := range links {
		codes = append(codes, code)
	}
	app1 := mustProc(t, s, "app1")

	var (
		mu       sync.Mutex
		received = map[string]int{}
		failed   atomic.Int64
		sent     atomic.Int64
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				code := codes[rand.IntN(len(codes))]
				sent.Add(1)
				resp, err := c.Get(base + "/" + code)
				if err != nil {
					failed.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusFound && resp.Header.Get("Location") == links[code] {
					mu.Lock()
					received[code]++
					mu.Unlock()
				} else {
					failed.Add(1)
				}
			}
		})
	}
	waitUntil(t, time.Minute, "500 redirects before the kill", func() bool { return sent.Load() > 500 })
	if err := app1.Kill(); err != nil {
		t.Fatal(err)
	}
	killedAt := sent.Load()
	waitUntil(t, time.Minute, "500 redirects after the kill", func() bool { return sent.Load() > killedAt+500 })
	if err := app1.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	restartedAt := sent.Load()
	waitUntil(t, time.Minute, "500 redirects after the restart", func() bool { return sent.Load() > restartedAt+500 })
	close(stop)
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("%d redirects failed or answered wrongly", n)
	}

	st, err := store.Open(store.Config{DSN: s.MySQLDSN(), MaxOpen: 2, QueryTimeout: 5 * time.Second}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ids := map[string]int64{}
	for _, code := range codes {
		l, err := st.Link(ctx, code)
		if err != nil {
			t.Fatal(err)
		}
		ids[code] = l.ID
	}
	from := time.Now().UTC().Add(-time.Hour).Truncate(time.Hour)
	to := from.Add(3 * time.Hour)
	stored := func() (map[string]int64, error) {
		out := map[string]int64{}
		for _, code := range codes {
			cs, err := st.ClickStats(ctx, ids[code], from, to, false, 1)
			if err != nil {
				return nil, err
			}
			out[code] = cs.Total
		}
		return out, nil
	}
	total := 0
	for _, n := range received {
		total += n
	}
	var got map[string]int64
	defer func() {
		if t.Failed() {
			for _, name := range []string{"app1", "app2"} {
				for _, line := range strings.Split(mustProc(t, s, name).LogTail(400), "\n") {
					if strings.Contains(line, "click") || strings.Contains(line, "ship") {
						t.Log(name, line)
					}
				}
			}
		}
	}()
	waitUntil(t, time.Minute, "the journals to ship", func() bool {
		got, err = stored()
		if err != nil {
			return false
		}
		sum := int64(0)
		for _, n := range got {
			sum += n
		}
		if sum < int64(total) {
			t.Logf("stored %d of %d", sum, total)
		}
		return sum >= int64(total)
	})
	lost, double := 0, 0
	for _, code := range codes {
		d := int(got[code]) - received[code]
		if d < 0 {
			lost -= d
		} else {
			double += d
		}
		if d != 0 {
			t.Errorf("%s: received %d redirects, %d clicks stored", code, received[code], got[code])
		}
	}
	t.Logf("redirects received %d (app1 killed after %d, restarted after %d sent); lost %d, double %d", total, killedAt, restartedAt, lost, double)
	checkJournalsEmpty(t, s)
}

// checkJournalsEmpty fails unless each app's journal holds no unshipped
// click (its oldest unshipped age is 0).
func checkJournalsEmpty(tb testing.TB, s *stack.Stack) {
	tb.Helper()
	for _, name := range []string{"app1", "app2"} {
		p := mustProc(tb, s, name)
		waitUntil(tb, 30*time.Second, name+"'s journal to be shipped", func() bool {
			v, err := metric(p.Addr(), "shortener_click_oldest_unshipped_seconds")
			return err == nil && v == 0
		})
	}
}

// metric reads one unlabelled metric from an app.
func metric(addr, name string) (float64, error) {
	resp, err := metricsClient.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	var v float64
	for _, line := range strings.Split(string(b), "\n") {
		if n, _ := fmt.Sscanf(line, name+" %g", &v); n == 1 {
			return v, nil
		}
	}
	return 0, fmt.Errorf("metric %s not found", name)
}
