package handler

import (
	"bufio"
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"shortener"
	"slices"
	"strings"
	"testing"
	"time"
)

var _ Exporter = (*fakeLinks)(nil)

// ExportLinks gives the fake's links of owner as the store does; clicks
// are the link's ID times 10.
func (f *fakeLinks) ExportLinks(ctx context.Context, owner string, fn func(shortener.Link, int64) error) error {
	return f.exportLinks(ctx, owner, -1, fn)
}

// failingExport is the fake's export failing after its first after links.
type failingExport struct {
	*fakeLinks
	after int
}

func (f failingExport) ExportLinks(ctx context.Context, owner string, fn func(shortener.Link, int64) error) error {
	return f.exportLinks(ctx, owner, f.after, fn)
}

func (f *fakeLinks) exportLinks(_ context.Context, owner string, failAfter int, fn func(shortener.Link, int64) error) error {
	f.mu.Lock()
	if f.err != nil {
		f.mu.Unlock()
		return f.err
	}
	var out []shortener.Link
	for _, l := range f.links {
		if l.Owner == owner && l.DeletedAt.IsZero() {
			out = append(out, l)
		}
	}
	f.mu.Unlock()
	slices.SortFunc(out, func(a, b shortener.Link) int { return cmp.Compare(a.ID, b.ID) })
	for i, l := range out {
		if i == failAfter {
			return fmt.Errorf("page %d: %w", i, shortener.ErrUnavailable)
		}
		if err := fn(l, l.ID*10); err != nil {
			return err
		}
	}
	return nil
}

// exportLinks fills f with n links of the key "k3y" (one of them with
// every field set, one deleted) and one of another key.
func exportLinks(f *fakeLinks, n int) {
	k := HashKey("k3y")
	for i := 1; i <= n; i++ {
		code := fmt.Sprintf("x%04d", i)
		f.links[code] = shortener.Link{ID: int64(i), Code: code, URL: "https://example.com/" + code, Redirect: 302,
			CreatedAt: now.Add(time.Duration(i) * time.Millisecond), Owner: k}
	}
	f.links["full"] = shortener.Link{ID: int64(n + 1), Code: "full", URL: "https://example.com/a,b\"c", Redirect: 308,
		CreatedAt: now.Add(1500 * time.Microsecond), ExpiresAt: now.Add(time.Hour), UpdatedAt: now, Disabled: true,
		Tags: []string{"a", "b"}, MaxVisits: 7, PasswordHash: "$2a$10$secrethashsecrethashsecrethash", Owner: k}
	f.links["deleted"] = shortener.Link{ID: int64(n + 2), Code: "deleted", URL: "https://example.com/", Redirect: 302, CreatedAt: now, DeletedAt: now, Owner: k}
	f.links["theirs"] = shortener.Link{ID: int64(n + 3), Code: "theirs", URL: "https://example.com/", Redirect: 302, CreatedAt: now, Owner: HashKey("other-k3y")}
}

// TestExportCSV exports more links than one flush holds as CSV: a header,
// then every link of the key's not deleted, oldest first, each field as
// documented, never the password's hash.
func TestExportCSV(t *testing.T) {
	f := newFakeLinks()
	exportLinks(f, 1200)
	h := newManageHandler(f, nil, Config{})
	rec := do(h, "GET", "/api/v1/links/export?format=csv", "", "X-Api-Key", "k3y")
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/csv; charset=utf-8" ||
		!strings.Contains(rec.Header().Get("Content-Disposition"), `filename="links.csv"`) {
		t.Fatalf("export: %d %v", rec.Code, rec.Header())
	}
	if strings.Contains(rec.Body.String(), "secrethash") {
		t.Error("the export holds the password's hash")
	}
	rows, err := csv.NewReader(rec.Body).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rows[0], ","); got != "code,short_url,url,redirect,created_at,expires_at,disabled,tags,max_visits,password_protected,clicks" {
		t.Errorf("header %s", got)
	}
	if len(rows) != 1+1201 || rows[1][0] != "x0001" || rows[1200][0] != "x1200" {
		t.Fatalf("%d rows, first %v, last %v", len(rows), rows[1], rows[len(rows)-1])
	}
	want := []string{"full", "http://sho.rt/full", `https://example.com/a,b"c`, "308", "2026-12-03T12:00:00.001Z", "2026-12-03T13:00:00.000Z",
		"true", "a b", "7", "true", "12010"}
	if got := rows[1201]; !slices.Equal(got, want) {
		t.Errorf("a link with every field:\n got %q\nwant %q", got, want)
	}
	if got := rows[1]; !slices.Equal(got, []string{"x0001", "http://sho.rt/x0001", "https://example.com/x0001", "302", "2026-12-03T12:00:00.001Z", "", "false", "", "", "false", "10"}) {
		t.Errorf("a plain link: %q", got)
	}
	// No links: the header alone.
	empty := do(h, "GET", "/api/v1/links/export", "", "X-Api-Key", "adm1n")
	if empty.Code != 200 || strings.TrimSpace(empty.Body.String()) != strings.Join(exportColumns, ",") {
		t.Errorf("no links: %d %q", empty.Code, empty.Body)
	}
}

// TestExportJSONL exports as JSON Lines: an object per link, the same
// fields as the CSV's.
func TestExportJSONL(t *testing.T) {
	f := newFakeLinks()
	exportLinks(f, 3)
	h := newManageHandler(f, nil, Config{})
	rec := do(h, "GET", "/api/v1/links/export?format=jsonl", "", "X-Api-Key", "k3y")
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("export: %d %v", rec.Code, rec.Header())
	}
	lines := strings.Split(strings.TrimSpace(rec.Body.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines: %s", len(lines), rec.Body)
	}
	want := `{"code":"full","short_url":"http://sho.rt/full","url":"https://example.com/a,b\"c","redirect":308,` +
		`"created_at":"2026-12-03T12:00:00.001Z","expires_at":"2026-12-03T13:00:00.000Z","disabled":true,"tags":["a","b"],` +
		`"max_visits":7,"password_protected":true,"clicks":40}`
	var got, wantV map[string]any
	if err := json.Unmarshal([]byte(lines[3]), &got); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal([]byte(want), &wantV)
	if fmt.Sprint(got) != fmt.Sprint(wantV) {
		t.Errorf("a link with every field:\n got %s\nwant %s", lines[3], want)
	}
	if !strings.Contains(lines[0], `"expires_at":null`) || !strings.Contains(lines[0], `"max_visits":null`) || !strings.Contains(lines[0], `"tags":[]`) {
		t.Errorf("a plain link: %s", lines[0])
	}
	if rec := do(h, "GET", "/api/v1/links/export?format=xml", "", "X-Api-Key", "k3y"); rec.Code != 400 {
		t.Errorf("format=xml: %d, want 400", rec.Code)
	}
	if rec := do(h, "GET", "/api/v1/links/export", ""); rec.Code != 401 {
		t.Errorf("without a key: %d, want 401", rec.Code)
	}
}

// TestExportFails: an error before the first link is an error answer; one
// after the answer began cuts the connection, so the client never takes a
// short file for a whole one.
func TestExportFails(t *testing.T) {
	f := newFakeLinks()
	exportLinks(f, 1200)
	h := newManageHandler(f, nil, Config{})
	f.err = shortener.ErrUnavailable
	if rec := do(h, "GET", "/api/v1/links/export", "", "X-Api-Key", "k3y"); rec.Code != 503 {
		t.Errorf("MySQL down from the start: %d, want 503", rec.Code)
	}
	f.err = nil
	h = mustNew(Config{BaseURL: "http://sho.rt"}, Deps{Keys: NewKeyring(nil, []string{"k3y"}, nil, time.Second, time.Now, nil),
		Exporter: failingExport{f, 700}, Log: discardLogger()})
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/links/export", nil)
	req.Header.Set("X-Api-Key", "k3y")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := 0
	s := bufio.NewScanner(resp.Body)
	for s.Scan() {
		lines++
	}
	_, err = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 || s.Err() == nil && err == nil {
		t.Errorf("cut short after %d lines: status %d, read error %v; want 200 and a read error", lines, resp.StatusCode, s.Err())
	}
	if !errors.Is(s.Err(), io.ErrUnexpectedEOF) {
		t.Logf("read error: %v", s.Err())
	}
}
