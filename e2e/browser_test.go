package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"shortener/internal/poll"
	"shortener/internal/stack"
	"shortener/internal/stack/stacktest"
	"shortener/internal/topology"
)

// The browser test drives Debian's headless Chromium through the web pages
// of a whole stack (nginx in front of two apps), as a person would: it
// shortens a link with the form, copies it, follows it, previews it, does
// the same without JavaScript, makes mistakes and meets a deleted link,
// and manages a link on My links.
// It saves a screenshot of each page at desktop and phone width into
// $SHORTENER_SCREENSHOTS (make screenshots: docs/screenshots), or a
// temporary directory.

// browserTimeout bounds the whole browser test once the stack is up: a
// guard against a hang, not a limit on any step. The waits inside the
// page (chromedp.Poll) have no timeout of their own; this is theirs.
const browserTimeout = poll.Patience

// Viewports of the screenshots: a laptop and a common phone.
var viewports = []struct {
	name          string
	width, height int64
	mobile        bool
}{{"desktop", 1280, 860, false}, {"phone", 390, 844, true}}

// chromiumPath finds Debian's Chromium. Without it the test skips, or
// fails under SHORTENER_INTEGRATION=1: CI must not pass by skipping.
func chromiumPath(tb testing.TB) string {
	tb.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	stacktest.Unavailable(tb, "browser test needs Chromium: apt-get install chromium, or run `make test`")
	return ""
}

// newBrowser starts headless Chromium with a fresh profile and the flags
// that keep it off the network (it only ever talks to 127.0.0.1 here); it
// stops with the test.
func newBrowser(tb testing.TB) context.Context {
	tb.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(tb)),
		chromedp.Headless,
		chromedp.NoSandbox, // root in CI
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(tb.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("safebrowsing-disable-auto-update", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.Flag("font-render-hinting", "none"),
		chromedp.WindowSize(1280, 860),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	tb.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		tb.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// shots saves screenshots of the pages the test visits.
type shots struct {
	tb  testing.TB
	dir string
}

func newShots(tb testing.TB) shots {
	dir := os.Getenv("SHORTENER_SCREENSHOTS")
	if dir == "" {
		dir = tb.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	return shots{tb: tb, dir: dir}
}

// a11yProblems lists what the page gets wrong of the accessibility rules
// a machine can check: a language, one h1, a label for every field, alt
// text for every image, a name for every link and button, unique ids,
// aria-describedby pointing at something, no positive tabindex (which
// would break the focus order), and the contrast of every text.
const a11yProblems = `(() => {
  const p = [];
  if (!document.documentElement.lang) p.push("no lang on <html>");
  const h1 = document.querySelectorAll("h1").length;
  if (h1 !== 1) p.push(h1 + " h1 elements");
  document.querySelectorAll("input:not([type=hidden]), select, textarea").forEach(e => {
    if (!(e.labels && e.labels.length) && !e.getAttribute("aria-label")) p.push("no label for #" + (e.id || e.name));
  });
  document.querySelectorAll("img").forEach(e => { if (!e.getAttribute("alt")) p.push("no alt on " + e.getAttribute("src")); });
  document.querySelectorAll("a[href], button").forEach(e => {
    if (!e.textContent.trim() && !e.getAttribute("aria-label")) p.push("no name: " + e.outerHTML.slice(0, 80));
  });
  const ids = new Set();
  document.querySelectorAll("[id]").forEach(e => { if (ids.has(e.id)) p.push("duplicate id " + e.id); ids.add(e.id); });
  document.querySelectorAll("[aria-describedby]").forEach(e => e.getAttribute("aria-describedby").split(/\s+/).forEach(id => {
    if (!document.getElementById(id)) p.push("#" + e.id + " described by missing #" + id);
  }));
  document.querySelectorAll("[tabindex]").forEach(e => { if (e.tabIndex > 0) p.push("positive tabindex on #" + e.id); });
  // Text contrast (WCAG AA): 4.5:1, or 3:1 for large text, against the
  // first opaque background behind it.
  const rgb = c => (c.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
    .reduce((a, v, i) => a + v * [0.2126, 0.7152, 0.0722][i], 0);
  const bg = e => {
    for (; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor); if (c.length === 3 || c[3] > 0) return c; }
    return [255, 255, 255];
  };
  document.querySelectorAll("body *").forEach(e => {
    if (![...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()) || !e.getClientRects().length) return;
    const st = getComputedStyle(e);
    if (st.visibility === "hidden" || e.closest(".sr-only, [aria-hidden=true]")) return;
    const [a, b] = [lum(rgb(st.color)), lum(bg(e))];
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    const size = parseFloat(st.fontSize), large = size >= 24 || (size >= 18.66 && Number(st.fontWeight) >= 700);
    if (ratio < (large ? 3 : 4.5)) p.push("contrast " + ratio.toFixed(2) + " for " + JSON.stringify(e.textContent.trim().slice(0, 40)));
  });
  return p;
})()`

// take checks the page's accessibility basics (a11yProblems), then saves
// it as it is now at every viewport (name-desktop.png, name-phone.png)
// and goes back to the desktop one. A change of viewport lays the page
// out again without reloading it, so a page that script changed is shot
// as it is.
func (s shots) take(ctx context.Context, name string) {
	s.tb.Helper()
	problems, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](a11yProblems))
	if err != nil {
		s.tb.Fatalf("check %s: %v", name, err)
	}
	for _, p := range problems {
		s.tb.Errorf("page %s: %s", name, p)
	}
	for i := len(viewports) - 1; i >= 0; i-- { // phone first, desktop last: the test goes on at desktop size
		v := viewports[i]
		opts := []chromedp.EmulateViewportOption{}
		if v.mobile {
			opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateScale(2))
		}
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(v.width, v.height, opts...)); err != nil {
			s.tb.Fatalf("viewport %s: %v", v.name, err)
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			s.tb.Fatalf("screenshot %s: %v", name, err)
		}
		path := filepath.Join(s.dir, name+"-"+v.name+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			s.tb.Fatal(err)
		}
	}
}

// destination is the site short links point to in the test: a page with
// a known title on a port of its own. Its host is "localhost", not the
// stack's 127.0.0.1, which the URL policy would refuse as a loop.
func destination(tb testing.TB) string {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>Destination</title><h1>You arrived at %s</h1>", r.URL.Path)
	}))
	tb.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return "http://localhost:" + port + "/landing?from=browser-test"
}

// startBrowserStack is startFullStack whose apps accept links to
// loopback hosts: the test's destination server runs on this machine.
func startBrowserStack(tb testing.TB) *stack.Stack {
	tb.Helper()
	return startFullStack(tb, func(cfg *stack.Config) {
		cfg.AppEnv = append(cfg.AppEnv, "SHORTENER_ALLOW_LOCAL_TARGETS=true")
	})
}

// apiKey is the stack's API key (make up writes .stack/api-key).
func apiKey(tb testing.TB, dir string) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, topology.APIKeyFile))
	if err != nil {
		tb.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestBrowser is the web pages' end-to-end test in a real browser.
func TestBrowser(t *testing.T) {
	chromiumPath(t) // before the stack: no Chromium, no need for a stack
	began := time.Now()
	s := startBrowserStack(t)
	stackUp := time.Now()
	defer func() {
		t.Logf("stack up in %s, browser steps in %s", stackUp.Sub(began).Round(time.Millisecond), time.Since(stackUp).Round(time.Millisecond))
	}()
	base := s.BaseURL()
	dest := destination(t)
	key := apiKey(t, s.Dir())
	shot := newShots(t)
	bctx := newBrowser(t)
	ctx, cancel := context.WithTimeout(bctx, browserTimeout)
	defer cancel()
	lap := time.Now()
	step := func(what string) { // the test log says where the time goes
		t.Logf("%s: %s", what, time.Since(lap).Round(time.Millisecond))
		lap = time.Now()
	}
	must := func(err error, what string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		must(err, "text of "+sel)
		return strings.TrimSpace(s)
	}
	// The page may read and write the clipboard, as a person's click allows.
	for _, perm := range []string{"clipboard-read", "clipboard-write"} {
		_, err := chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
			Permission: &browser.PermissionDescriptor{Name: perm}, Setting: "granted", Origin: base})
		must(err, "grant "+perm)
	}

	// 1. Keep the API key in the browser, from the home page, so the
	// links made next are the key's, with stats.
	must(chromedp.Do(ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("url"))), "open /")
	shot.take(ctx, "home")
	// The keyboard's way through the page: the skip link first, the menu,
	// then the URL field.
	var order []string
	for range 6 {
		must(chromedp.Do(ctx, chromedp.KeyEvent("\t")), "press Tab")
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(e => e.id || e.textContent.trim())(document.activeElement)`))
		must(err, "read the focus")
		order = append(order, got)
	}
	if want := []string{"Skip to content", "shortener", "Shorten", "My links", "Trending", "url"}; !slices.Equal(order, want) {
		t.Errorf("Tab goes through %q, want %q", order, want)
	}
	must(chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(".keybox > summary")),
		chromedp.SendKeys(chromedp.ID("key"), key),
		chromedp.Click(chromedp.CSS(`.keybox button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`form.forget`)),
	), "keep the API key")

	// 2. Shorten through the form, with JavaScript: the answer replaces
	// the form in place (the page is not reloaded: the marker survives).
	must(chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`),
		chromedp.SendKeys(chromedp.ID("url"), dest),
		chromedp.Click(chromedp.CSS(`form#shorten button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("result-h")),
	), "shorten with the form")
	short, err := chromedp.Run(ctx, chromedp.Value(chromedp.ID("short")))
	must(err, "read the short URL")
	if !strings.HasPrefix(short, base+"/") {
		t.Fatalf("short URL %q is not under %s", short, base)
	}
	code := strings.TrimPrefix(short, base+"/")
	if kept, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.notReloaded === true`)); err != nil || !kept {
		t.Errorf("the form reloaded the page (err %v): app.js did not answer in place", err)
	}
	if got := text(".result .host"); !strings.HasPrefix(got, "localhost:") {
		t.Errorf("result shows the host as %q", got)
	}
	// The image may still be on its way when the result shows: wait for
	// it to load (an image that fails to load never gets a width).
	if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](`(() => { const i = document.querySelector("img.qr"); return i.complete && i.naturalWidth > 0 })()`,
		chromedp.WithPollingTimeout(0))); err != nil {
		t.Errorf("the QR code image did not load (err %v)", err)
	}
	shot.take(ctx, "created")
	step("key kept, link made")

	// 3. Copy the short URL with the copy button; the clipboard holds it.
	must(chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`button[data-copy]`)),
		chromedp.Poll[chromedp.Void](`document.getElementById("copy-status").textContent.startsWith("Copied")`, chromedp.WithPollingTimeout(0)),
	), "copy")
	clip, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise))
	must(err, "read the clipboard")
	if clip != short {
		t.Errorf("clipboard holds %q, want %q", clip, short)
	}

	// 4. Follow it: the browser lands on the destination, through nginx.
	must(chromedp.Do(ctx, chromedp.Navigate(short), chromedp.WaitVisible(chromedp.CSS("h1"))), "follow "+short)
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); loc != dest {
		t.Errorf("following %s landed on %q, want %q", short, loc, dest)
	}

	// 5. The preview shows where it goes, and nothing only the owner may
	// see (no click count, no creation date: it answers from the cache).
	must(chromedp.Do(ctx, chromedp.Navigate(short+"+"), chromedp.WaitVisible(chromedp.CSS(".bighost"))), "open the preview")
	if got := text("#dest-host"); !strings.HasPrefix(got, "localhost:") {
		t.Errorf("preview shows the host as %q", got)
	}
	if body := text("main"); strings.Contains(body, "Clicks") || strings.Contains(body, "Created") {
		t.Errorf("preview shows the owner's data:\n%s", body)
	}
	shot.take(ctx, "preview")
	step("copied, followed, previewed")

	// 6. The owner's stats page (the key kept in step 1 opens it) counts
	// the click: clicks are shipped from each app's journal in batches,
	// so reload until it is counted.
	must(chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`a[href="/stats/`+code+`"]`)), chromedp.WaitVisible(chromedp.ID("total"))), "open the stats page")
	poll.Until(t, "the stats page to count the click", func() error {
		if got := text("#total"); got != "1" {
			err := fmt.Errorf("it counts %q clicks; the stats API says %s", got, apiStats(t, base, key, code))
			must(chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("total"))), "reload the stats page")
			return err
		}
		return nil
	})
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("svg rect.bar").length`)); n != 48 {
		t.Errorf("the chart has %d bars, want 48 (hours)", n)
	}
	shot.take(ctx, "stats")

	// 7. Trending: the list refreshes itself from the API, in place.
	must(chromedp.Do(ctx,
		chromedp.Navigate(base+"/trending?window=5m"),
		chromedp.WaitVisible(chromedp.ID("trend-rows")),
		chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`),
		chromedp.Poll[chromedp.Void](`document.getElementById("trend-status").textContent.startsWith("Updated")`,
			chromedp.WithPollingTimeout(0)),
	), "open trending and see it refresh")
	if kept, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.notReloaded === true`)); err != nil || !kept {
		t.Errorf("trending reloaded the page to refresh (err %v)", err)
	}
	shot.take(ctx, "trending")
	step("stats page, trending refreshed")

	// 8. A bad URL: the API's message next to the URL field, which gets
	// the focus.
	must(chromedp.Do(ctx,
		chromedp.Navigate(base+"/"),
		chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`),
		chromedp.SendKeys(chromedp.ID("url"), "ftp://example.com/file"),
		chromedp.Click(chromedp.CSS(`form#shorten button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("url-error")),
	), "submit a bad URL")
	if got := text("#url-error"); !strings.Contains(got, `scheme "ftp" is not allowed`) {
		t.Errorf("URL error says %q", got)
	}
	if kept, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.notReloaded === true`)); err != nil || !kept {
		t.Errorf("the bad form reloaded the page (err %v): app.js did not answer in place", err)
	}
	if id, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.id`)); id != "url" {
		t.Errorf("focus is on #%s after the error, want #url", id)
	}
	shot.take(ctx, "field-error")

	// 9. A deleted link: the browser gets the HTML 410 page; an unknown
	// one the 404 page.
	gone := createAndDelete(t, base, key, dest)
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(base+"/"+gone))
	must(err, "open a deleted link")
	if resp.Status != http.StatusGone || !strings.HasPrefix(resp.MimeType, "text/html") {
		t.Errorf("deleted link: %d %s, want 410 text/html", resp.Status, resp.MimeType)
	}
	if got := text("h1"); got != "This link has expired or was removed" {
		t.Errorf("410 page says %q", got)
	}
	shot.take(ctx, "gone")
	resp, err = chromedp.Run(ctx, chromedp.NavigateResponse(base+"/noSuchLink1"))
	must(err, "open an unknown link")
	if resp.Status != http.StatusNotFound || text("h1") != "This link does not exist" {
		t.Errorf("unknown link: %d %q", resp.Status, text("h1"))
	}
	shot.take(ctx, "not-found")
	step("bad URL, deleted and unknown links")

	// 10. My links: the key's links, found by a tag, edited, disabled,
	// enabled, exported and deleted (browser_links_test.go).
	browseMyLinks(ctx, t, shot, base, dest)
	step("my links")

	// 11. Without JavaScript, as another person (a browser context of its
	// own: no key kept): the stats page asks for the key; the plain form
	// post answers with the page, the copy button stays hidden (it needs
	// script), the link works.
	noJS, cancelNoJS := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
	defer cancelNoJS()
	_, err = chromedp.Call(noJS, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
	must(err, "disable JavaScript")
	must(chromedp.Do(noJS, chromedp.Navigate(base+"/stats/"+code), chromedp.WaitVisible(chromedp.ID("key"))), "open a stats page without a key")
	shot.take(noJS, "stats-key")
	must(chromedp.Do(noJS, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("url"))), "open / without JavaScript")
	must(chromedp.Do(noJS, chromedp.SendKeys(chromedp.ID("url"), dest+"&js=off")), "type a URL without JavaScript")
	resp, err = chromedp.RunResponse(noJS, chromedp.Click(chromedp.CSS(`form#shorten button[type=submit]`)))
	must(err, "shorten without JavaScript")
	if resp.Status != http.StatusCreated {
		t.Errorf("form post without JavaScript: %d, want 201", resp.Status)
	}
	noJSShort, err := chromedp.Run(noJS, chromedp.Value(chromedp.ID("short")))
	must(err, "read the short URL made without JavaScript")
	if hidden, _ := chromedp.Run(noJS, chromedp.Evaluate[bool](`getComputedStyle(document.querySelector("button[data-copy]")).display === "none"`)); !hidden {
		t.Error("the copy button shows without JavaScript")
	}
	shot.take(noJS, "created-nojs")
	must(chromedp.Do(noJS, chromedp.Navigate(noJSShort), chromedp.WaitVisible(chromedp.CSS("h1"))), "follow the link made without JavaScript")
	if loc, _ := chromedp.Run(noJS, chromedp.Location()); loc != dest+"&js=off" {
		t.Errorf("following %s landed on %q", noJSShort, loc)
	}
}

// apiStats is the stats API's answer for code, for a failure message.
func apiStats(tb testing.TB, base, key, code string) string {
	req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/links/"+code+"/stats?interval=hour", nil)
	req.Header.Set("X-Api-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Status + " " + string(b)
}

// createAndDelete makes a link through the API and deletes it, returning
// its code.
func createAndDelete(tb testing.TB, base, key, dest string) string {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/links", strings.NewReader(`{"url":"`+dest+`&deleted=1"}`))
	req.Header.Set("X-Api-Key", key) // the key's link, so the key may delete it
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		tb.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	code := between(string(body), `"code":"`, `"`)
	req, _ = http.NewRequest(http.MethodDelete, base+"/api/v1/links/"+code, nil)
	req.Header.Set("X-Api-Key", key)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		tb.Fatalf("delete %s: %d", code, resp.StatusCode)
	}
	return code
}

// between returns the text of s after the first start and before the next
// end.
func between(s, start, end string) string {
	_, rest, _ := strings.Cut(s, start)
	v, _, _ := strings.Cut(rest, end)
	return v
}
