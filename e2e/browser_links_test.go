package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"shortener/internal/poll"
)

// browseMyLinks is TestBrowser's walk through My links, as the owner of
// the key the browser of ctx keeps: it makes a link with tags and a
// password with the home page's more options, finds it on My links by
// its tag, changes its destination, disables and enables it (each seen
// through nginx by a visitor), downloads the export, and deletes it,
// first without ticking the confirmation. Every page is plain forms and
// 303s: no step needs the page's script.
func browseMyLinks(ctx context.Context, t *testing.T, shot shots, base, dest string) {
	t.Helper()
	must := func(err error, what string) {
		t.Helper()
		if err != nil {
			t.Fatalf("my links: %s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		must(err, "text of "+sel)
		return strings.Join(strings.Fields(s), " ")
	}
	// submit clicks a button that posts a form and waits for the page
	// the browser ends on (after the 303, the list), which must answer
	// status.
	submit := func(sel string, status int64, what string) {
		t.Helper()
		resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel)))
		must(err, what)
		if resp.Status != status {
			t.Fatalf("my links: %s: %d, want %d", what, resp.Status, status)
		}
	}
	const password = "open sesame"
	edited := dest + "&edited=1"

	// 1. The home page's more options: tags and a password.
	must(chromedp.Do(ctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.ID("url")),
		chromedp.Click(chromedp.CSS("details.more > summary")),
		chromedp.WaitVisible(chromedp.ID("tags")),
		chromedp.SendKeys(chromedp.ID("url"), dest+"&managed=1"),
		chromedp.SendKeys(chromedp.ID("tags"), "Browser-Test, promo"),
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.Click(chromedp.CSS(`form#shorten button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("result-h")),
	), "shorten with tags and a password")
	short, err := chromedp.Run(ctx, chromedp.Value(chromedp.ID("short")))
	must(err, "read the short URL")
	code := strings.TrimPrefix(short, base+"/")
	if facts := text(".result .facts"); !strings.Contains(facts, "browser-test, promo") || !strings.Contains(facts, "asked before it opens") {
		t.Errorf("my links: the new link's facts are %q, want its tags and its password", facts)
	}
	row := "#link-" + code

	// 2. My links, from the menu: the new link first, with its state.
	must(chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`nav a[href="/links"]`)), chromedp.WaitVisible(chromedp.CSS(row))), "open My links")
	if first, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("li.linkrow").id`)); first != "link-"+code {
		t.Errorf("my links: the first row is %q, want the newest link, %s", first, code)
	}
	if states := text(row + " .states"); states != "Active Password" {
		t.Errorf("my links: the new link's states are %q, want Active Password", states)
	}
	shot.take(ctx, "my-links")

	// 3. Found by its tag, in any case, in a list of its own.
	must(chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("tag"), "BROWSER-test")), "type a tag")
	submit(`form.search button[type=submit]`, http.StatusOK, "search by tag")
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("li.linkrow").length`)); n != 1 || text(row+" .tags") != "browser-test promo" {
		t.Errorf("my links: the tag's list has %d rows (tags %q), want its one link", n, text(row+" .tags"))
	}

	// 4. A new destination: the list it was on comes back, saying so.
	must(chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(row+" details.manage > summary")),
		chromedp.WaitVisible(chromedp.ID("url-"+code)),
	), "open the link's forms")
	shot.take(ctx, "my-links-manage")
	must(chromedp.Do(ctx, chromedp.Clear(chromedp.ID("url-"+code)), chromedp.SendKeys(chromedp.ID("url-"+code), edited)), "type a new destination")
	submit(row+` form[data-action=edit] button`, http.StatusOK, "save the destination")
	if got := text("#flash"); got != "The destination of "+code+" is changed." {
		t.Errorf("my links: after the edit the page says %q", got)
	}
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); !strings.HasSuffix(loc, "/links?tag=BROWSER-test") {
		t.Errorf("my links: the edit came back to %s, want the tag's list", loc)
	}
	if got := text(row + " .url"); got != edited {
		t.Errorf("my links: the row goes to %q after the edit, want %q", got, edited)
	}

	// 5. Disabled: every visitor gets the 410 page saying so.
	manage := func(action string, status int64, what string) {
		t.Helper()
		must(chromedp.Do(ctx, chromedp.Click(chromedp.CSS(row+" details.manage > summary"))), "open the link's forms")
		submit(row+` form[data-action=`+action+`] button`, status, what)
	}
	manage("disable", http.StatusOK, "disable")
	if states := text(row + " .states"); !strings.HasPrefix(states, "Disabled") {
		t.Errorf("my links: a disabled link's states are %q", states)
	}
	awaitAnswer(t, short, http.StatusGone)
	resp, err := chromedp.RunResponse(ctx, chromedp.Navigate(short))
	must(err, "open the disabled link")
	if resp.Status != http.StatusGone || text("h1") != "This link is disabled" {
		t.Errorf("my links: the disabled link answers %d %q", resp.Status, text("h1"))
	}

	// 6. Enabled again: its password form, then the new destination.
	must(chromedp.Do(ctx, chromedp.Navigate(base+"/links?tag=browser-test"), chromedp.WaitVisible(chromedp.CSS(row))), "back to the list")
	manage("enable", http.StatusOK, "enable")
	if states := text(row + " .states"); states != "Active Password" {
		t.Errorf("my links: an enabled link's states are %q", states)
	}
	awaitAnswer(t, short, http.StatusUnauthorized) // its password form
	must(chromedp.Do(ctx,
		chromedp.Navigate(short),
		chromedp.WaitVisible(chromedp.ID("password")),
		chromedp.SendKeys(chromedp.ID("password"), password),
	), "open the enabled link")
	// The answer is a redirect to another origin: wait for its page.
	must(chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`form[action="/`+code+`"] button[type=submit]`))), "send the password")
	poll.Until(t, "the password to open the link", func() error {
		// A page on its way has no document to ask yet: each try gets a
		// second, so that the next one asks the page that has arrived.
		ectx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		page, err := chromedp.Run(ectx, chromedp.Evaluate[string](`location.href + " " + document.title + ": " + document.body.innerText.slice(0, 300)`))
		if err != nil || !strings.HasPrefix(page, edited+" Destination") {
			return fmt.Errorf("the browser shows %s (err %v)", page, err)
		}
		return nil
	})
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); loc != edited {
		t.Errorf("my links: the password led to %q, want the new destination %q", loc, edited)
	}

	// 7. The export, downloaded with the key this browser keeps.
	must(chromedp.Do(ctx, chromedp.Navigate(base+"/links"), chromedp.WaitVisible(chromedp.ID("export-csv"))), "back to My links")
	csv, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch(document.getElementById("export-csv").href).then(r => r.ok ? r.text() : "status " + r.status)`, chromedp.EvalAwaitPromise))
	must(err, "download the export")
	if !strings.HasPrefix(csv, "code,short_url,url,") || !strings.Contains(csv, code+","+short+",") || !strings.Contains(csv, "browser-test promo") {
		t.Errorf("my links: the export holds:\n%s", csv)
	}

	// 8. Deleted, once the box is ticked: not ticked, the form says so
	// next to it and puts the focus on it.
	must(chromedp.Do(ctx, chromedp.Navigate(base+"/links?tag=browser-test"), chromedp.WaitVisible(chromedp.CSS(row))), "back to the tag's list")
	manage("delete", http.StatusBadRequest, "delete without the box ticked")
	if got := text("#confirm-" + code + "-error"); !strings.Contains(got, "tick the box") {
		t.Errorf("my links: an unconfirmed delete says %q", got)
	}
	// The page's autofocus moves the focus in a rendering update after
	// the page has loaded: the box gets it a moment later, not at once.
	poll.Until(t, "the focus on the box after the refused delete", func() error {
		if id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.id`)); err != nil || id != "confirm-"+code {
			return fmt.Errorf("the focus is on #%s (err %v)", id, err)
		}
		return nil
	})
	shot.take(ctx, "my-links-confirm")
	must(chromedp.Do(ctx, chromedp.Click(chromedp.ID("confirm-"+code))), "tick the box")
	submit(row+` form[data-action=delete] button`, http.StatusOK, "delete")
	if got := text("#flash"); got != code+" is deleted: it answers 410 from now on." {
		t.Errorf("my links: after the delete the page says %q", got)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("li.linkrow").length`)); n != 0 {
		t.Errorf("my links: the tag's list still has %d rows after the delete", n)
	}
	awaitAnswer(t, short, http.StatusGone)
}

// awaitAnswer waits until a browser's GET of url through nginx answers
// status: an edit reaches every instance's cache by its invalidation,
// which lands within a second of the edit's answer, not at once.
func awaitAnswer(t *testing.T, url string, status int) {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	poll.Until(t, fmt.Sprintf("%s to answer %d", url, status), func() error {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Accept", "text/html")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != status {
			return fmt.Errorf("it answers %d", resp.StatusCode)
		}
		return nil
	})
}
