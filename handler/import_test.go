package handler

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"shortener"
	"strings"
	"testing"
	"time"

	"shortener/internal/stack/stacktest"
	"shortener/store"
)

var _ Importer = (*fakeLinks)(nil)

// InsertLinks inserts as the store does: a link whose code or ID is taken
// is not inserted, and each gets back what its code holds.
func (f *fakeLinks) InsertLinks(_ context.Context, links []shortener.Link) ([]shortener.Link, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	ids := map[int64]bool{}
	for _, l := range f.links {
		ids[l.ID] = true
	}
	out := make([]shortener.Link, len(links))
	for i, l := range links {
		if have, ok := f.links[l.Code]; ok {
			out[i] = have
			continue
		}
		if ids[l.ID] {
			continue
		}
		f.links[l.Code], ids[l.ID], out[i] = l, true, l
		f.creates++
	}
	return out, nil
}

// importFile posts body to the import as contentType with the key k3y,
// and returns the status and summary.
func importBody(t *testing.T, h http.Handler, contentType, body string) (int, importSummary, string) {
	t.Helper()
	rec := do(h, "POST", "/api/v1/links/import", body, "X-Api-Key", "k3y", "Content-Type", contentType)
	var s importSummary
	if rec.Code == 200 {
		if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
			t.Fatalf("summary %s: %v", rec.Body, err)
		}
	}
	return rec.Code, s, rec.Body.String()
}

// TestImportFormats imports a file of each format read, recognised by its
// header: the summary names it, and each link is stored with the fields
// that format holds.
func TestImportFormats(t *testing.T) {
	created := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	for _, tt := range []struct {
		name, format, file string
		want               []shortener.Link // only the fields checked: code, URL, redirect, created, expires, tags, disabled, max visits
	}{
		{"ours", "shortener", "code,short_url,url,redirect,created_at,expires_at,disabled,tags,max_visits,password_protected,clicks\n" +
			"ours-1,http://old.example/ours-1,https://example.com/1,308,2025-03-04T05:06:07.000Z,2030-01-01T00:00:00.000Z,true,a b,5,false,17\n" +
			"ours-2,,https://example.com/2,,,,,,,,\n",
			[]shortener.Link{
				{Code: "ours-1", URL: "https://example.com/1", Redirect: 308, CreatedAt: created, ExpiresAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), Disabled: true, Tags: []string{"a", "b"}, MaxVisits: 5},
				{Code: "ours-2", URL: "https://example.com/2", Redirect: 302, CreatedAt: now},
			}},
		{"Shlink web client", "shlink", "createdAt,domain,shortCode,shortUrl,longUrl,title,tags,visits\n" +
			"2025-03-04T05:06:07+00:00,s.test,shl1,https://s.test/shl1,https://example.com/shlink,\"A title, with a comma\",Launch|q4,12\n",
			[]shortener.Link{{Code: "shl1", URL: "https://example.com/shlink", Redirect: 302, CreatedAt: created, Tags: []string{"launch", "q4"}}}},
		{"YOURLS table", "yourls", "\ufeffkeyword,url,title,timestamp,ip,clicks\n" +
			"yrl,https://example.com/yourls,Title,2025-03-04 05:06:07,192.0.2.1,40\n",
			[]shortener.Link{{Code: "yrl", URL: "https://example.com/yourls", Redirect: 302, CreatedAt: created}}},
		{"YOURLS Import/Export plugin", "yourls", "source,target,hits\r\n/yplug/,https://example.com/plugin,3\r\n",
			[]shortener.Link{{Code: "yplug", URL: "https://example.com/plugin", Redirect: 302, CreatedAt: now}}},
		{"Bitly dashboard", "bitly", "Title,Link,Custom Link,Destination URL,Date Created,Tags,Engagements\n" +
			"A,https://bit.ly/3abcDEF,go.example.com/spring,https://example.com/spring,2025-03-04 05:06:07,\"sale, q4\",9\n" +
			"B,bit.ly/4xyz,,https://example.com/plain,,,0\n",
			[]shortener.Link{
				{Code: "spring", URL: "https://example.com/spring", Redirect: 302, CreatedAt: created, Tags: []string{"q4", "sale"}},
				{Code: "4xyz", URL: "https://example.com/plain", Redirect: 302, CreatedAt: now},
			}},
		{"Bitly API", "bitly", "id,link,long_url,title,created_at,tags\n" +
			"bit.ly/bapi1,https://bit.ly/bapi1,https://example.com/api,T,2025-03-04T05:06:07+0000,\n",
			[]shortener.Link{{Code: "bapi1", URL: "https://example.com/api", Redirect: 302, CreatedAt: created}}},
	} {
		f := newFakeLinks()
		h := newManageHandler(f, nil, Config{})
		status, sum, body := importBody(t, h, "text/csv", tt.file)
		if status != 200 || sum.Format != tt.format || sum.Created != len(tt.want) || sum.Rows != len(tt.want) ||
			len(sum.Invalid)+len(sum.Conflicts) != 0 {
			t.Errorf("%s: %d %s; want %d created as %s", tt.name, status, body, len(tt.want), tt.format)
			continue
		}
		for _, w := range tt.want {
			l := f.links[w.Code]
			if l.URL != w.URL || l.Redirect != w.Redirect || !l.CreatedAt.Equal(w.CreatedAt) || !l.ExpiresAt.Equal(w.ExpiresAt) ||
				fmt.Sprint(l.Tags) != fmt.Sprint(w.Tags) || l.Disabled != w.Disabled || l.MaxVisits != w.MaxVisits || l.Owner != HashKey("k3y") || l.ID == 0 {
				t.Errorf("%s: %s stored as %+v, want %+v", tt.name, w.Code, l, w)
			}
		}
	}
}

// TestImportRows imports rows that are created, already there, taken by
// someone else or invalid, and checks each is reported with its row and
// why; a second import of the file creates nothing.
func TestImportRows(t *testing.T) {
	f := newFakeLinks()
	h := newManageHandler(f, nil, Config{})
	mine, theirs := HashKey("k3y"), HashKey("other-k3y")
	f.links["have"] = shortener.Link{ID: 9001, Code: "have", URL: "https://example.com/have", Redirect: 302, CreatedAt: now, Owner: mine}
	f.links["elsewhere"] = shortener.Link{ID: 9002, Code: "elsewhere", URL: "https://example.com/mine", Redirect: 302, CreatedAt: now, Owner: mine}
	f.links["theirs"] = shortener.Link{ID: 9003, Code: "theirs", URL: "https://example.com/theirs", Redirect: 302, CreatedAt: now, Owner: theirs}
	f.links["was"] = shortener.Link{ID: 9004, Code: "was", URL: "https://example.com/was", Redirect: 302, CreatedAt: now, Owner: mine, DeletedAt: now}
	file := "code,url,redirect,created_at,tags,password_protected,max_visits\n" +
		"new1,https://example.com/new1,,,,,\n" + // row 2: created
		"have,https://example.com/have,,,,,\n" + // 3: existing
		"elsewhere,https://example.com/other,,,,,\n" + // 4: conflict, another URL
		"theirs,https://example.com/theirs,,,,,\n" + // 5: conflict, another key's
		"was,https://example.com/was,,,,,\n" + // 6: conflict, deleted
		",https://example.com/nocode,,,,,\n" + // 7: invalid, no code
		"a,https://example.com/short,,,,,\n" + // 8: invalid, code too short
		"api,https://example.com/reserved,,,,,\n" + // 9: invalid, reserved
		"bad-url,ftp://example.com/,,,,,\n" + // 10: invalid URL
		"bad-redirect,https://example.com/r,303,,,,\n" + // 11
		"bad-time,https://example.com/t,,yesterday,,,\n" + // 12
		"bad-tag,https://example.com/t,,,a.b,,\n" + // 13
		"locked,https://example.com/locked,,,,true,\n" + // 14: created disabled
		"new1,https://example.com/new1,,,,,\n" + // 15: the same row again: existing
		"bad-max,https://example.com/m,,,,,-1\n" + // 16
		"short-row,https://example.com/short-row\n" // 17: a short row is a row with empty fields: created
	status, sum, body := importBody(t, h, "text/csv", file)
	if status != 200 {
		t.Fatalf("import: %d %s", status, body)
	}
	if sum.Rows != 16 || sum.Created != 3 || sum.Existing != 2 {
		t.Errorf("rows %d, created %d, existing %d; want 16, 3, 2: %s", sum.Rows, sum.Created, sum.Existing, body)
	}
	issues := func(list []importIssue) string {
		var b []string
		for _, i := range list {
			b = append(b, fmt.Sprintf("%d:%s:%s:%s", i.Row, i.Code, i.Error.Code, i.Error.Field))
		}
		return strings.Join(b, " ")
	}
	if got, want := issues(sum.Conflicts), "4:elsewhere:alias_taken:code 5:theirs:alias_taken:code 6:was:alias_taken:code"; got != want {
		t.Errorf("conflicts\n got %s\nwant %s", got, want)
	}
	if got, want := issues(sum.Invalid), "7::invalid_alias:code 8:a:invalid_alias:code 9:api:invalid_alias:code 10:bad-url:url_scheme:url "+
		"11:bad-redirect:invalid_request:redirect 12:bad-time:invalid_request:created_at 13:bad-tag:invalid_request:tags 16:bad-max:invalid_request:max_visits"; got != want {
		t.Errorf("invalid\n got %s\nwant %s", got, want)
	}
	if got, want := issues(sum.Disabled), "14:locked:invalid_request:password"; got != want || !f.links["locked"].Disabled {
		t.Errorf("disabled: got %s (stored %+v), want %s", got, f.links["locked"], want)
	}
	if f.links["elsewhere"].URL != "https://example.com/mine" || f.links["theirs"].Owner != theirs {
		t.Error("a conflict changed the link it met")
	}
	creates := f.creates
	if status, again, _ := importBody(t, h, "text/csv", file); status != 200 || again.Created != 0 || again.Existing != 5 || f.creates != creates {
		t.Errorf("a second import: %d, %+v; want nothing created and the 5 links existing", status, again)
	}
}

// TestImportRefused checks what an import refuses whole, and that the
// summary's lists are capped with the rest counted.
func TestImportRefused(t *testing.T) {
	f := newFakeLinks()
	h := newManageHandler(f, nil, Config{})
	for _, tt := range []struct {
		name, contentType, body string
		status                  int
	}{
		{"JSON", "application/json", `{"links":[]}`, 415},
		{"no type", "", "code,url\n", 415},
		{"empty", "text/csv", "", 400},
		{"unknown header", "text/csv", "name,target_url\nx,https://example.com/\n", 400},
	} {
		if status, _, body := importBody(t, h, tt.contentType, tt.body); status != tt.status {
			t.Errorf("%s: %d %s, want %d", tt.name, status, body, tt.status)
		}
	}
	if rec := do(h, "POST", "/api/v1/links/import", "code,url\n", "Content-Type", "text/csv"); rec.Code != 401 {
		t.Errorf("without a key: %d, want 401", rec.Code)
	}
	var b strings.Builder
	b.WriteString("code,url\n")
	for i := range maxReported + 5 {
		fmt.Fprintf(&b, "bad%d,not a url\n", i)
	}
	status, sum, _ := importBody(t, h, "text/csv", b.String())
	if status != 200 || len(sum.Invalid) != maxReported || sum.InvalidOmitted != 5 || sum.Rows != maxReported+5 {
		t.Errorf("%d invalid rows: %d, %d listed and %d omitted", maxReported+5, status, len(sum.Invalid), sum.InvalidOmitted)
	}
	f.err = shortener.ErrUnavailable
	if status, _, _ := importBody(t, h, "text/csv", "code,url\nok1,https://example.com/\n"); status != 503 {
		t.Errorf("MySQL down: %d, want 503", status)
	}
}

// TestImportJSONL imports this service's JSON Lines export: blank lines
// skipped, a line that is no object reported with its number.
func TestImportJSONL(t *testing.T) {
	f := newFakeLinks()
	h := newManageHandler(f, nil, Config{})
	file := `{"code":"jl1","url":"https://example.com/j1","redirect":301,"created_at":"2025-03-04T05:06:07.000Z","expires_at":null,"disabled":false,"tags":["B","a"],"max_visits":4,"password_protected":false,"clicks":3}` + "\n" +
		"\n" +
		`{"code":"jl2","url":"https://example.com/j2","unknown":"ignored"}` + "\n" +
		`[1,2]` + "\n" +
		`{"code":"jl3","url":"https://example.com/j3","created_at":"soon"}` + "\n"
	status, sum, body := importBody(t, h, "application/x-ndjson", file)
	if status != 200 || sum.Format != "shortener" || sum.Created != 2 || len(sum.Invalid) != 2 || sum.Invalid[0].Row != 4 || sum.Invalid[1].Row != 5 ||
		sum.Invalid[0].Error.Message != "line 4 is not a JSON object" || sum.Invalid[1].Error.Message != `field "created_at" must be an RFC 3339 time, e.g. 2027-01-31T23:59:59Z` ||
		sum.Invalid[1].Error.Field != "created_at" {
		t.Fatalf("import: %d %s", status, body)
	}
	if l := f.links["jl1"]; l.Redirect != 301 || fmt.Sprint(l.Tags) != "[a b]" || l.MaxVisits != 4 || !l.CreatedAt.Equal(time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)) {
		t.Errorf("jl1 stored as %+v", l)
	}
	line := `{"code":"long","url":"https://example.com/` + strings.Repeat("x", maxJSONLine) + `"}`
	if status, _, _ := importBody(t, h, "application/x-ndjson", line); status != 400 {
		t.Errorf("a line past %d bytes: %d, want 400", maxJSONLine, status)
	}
}

// blockingImport is the fake's import that waits, inside InsertLinks,
// until released.
type blockingImport struct {
	*fakeLinks
	entered, release chan struct{}
}

func (b blockingImport) InsertLinks(ctx context.Context, links []shortener.Link) ([]shortener.Link, error) {
	b.entered <- struct{}{}
	<-b.release
	return b.fakeLinks.InsertLinks(ctx, links)
}

// TestImportsAtOnce: an instance runs at most importsAtOnce imports; one
// more is 429 at once, not queued.
func TestImportsAtOnce(t *testing.T) {
	f := newFakeLinks()
	b := blockingImport{f, make(chan struct{}), make(chan struct{})}
	h := mustNew(Config{BaseURL: "http://sho.rt", Policy: NewURLPolicy("http://sho.rt", nil, nil, false)}, Deps{
		Keys: NewKeyring(nil, []string{"k3y"}, nil, time.Second, time.Now, nil), IDs: &seqIDs{}, Importer: b, Log: discardLogger()})
	done := make(chan int)
	for i := range importsAtOnce {
		go func() {
			status, _, _ := importBody(t, h, "text/csv", fmt.Sprintf("code,url\nrun%d,https://example.com/\n", i))
			done <- status
		}()
		<-b.entered // it holds its slot, inside its insert
	}
	if status, _, body := importBody(t, h, "text/csv", "code,url\nthird,https://example.com/\n"); status != 429 {
		t.Errorf("a third import while %d run: %d %s, want 429", importsAtOnce, status, body)
	}
	close(b.release)
	for range importsAtOnce {
		if status := <-done; status != 200 {
			t.Errorf("a running import: %d, want 200", status)
		}
	}
	go func() { <-b.entered }()
	if status, sum, _ := importBody(t, h, "text/csv", "code,url\nlater,https://example.com/\n"); status != 200 || sum.Created != 1 {
		t.Errorf("once they ended: %d %+v, want 200 and a link", status, sum)
	}
}

// realStore is a migrated store on a database of the test's own, on the
// package's shared MariaDB: the tests below run the handler against the
// real queries.
func realStore(tb testing.TB) *store.Store {
	tb.Helper()
	dsn := stacktest.Database(tb, stacktest.Shared(tb))
	st, err := store.Open(store.Config{DSN: dsn, MaxOpen: 8, QueryTimeout: 5 * time.Second, DialTimeout: time.Second}, discardLogger())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	if err := st.Migrate(context.Background(), 30*time.Second); err != nil {
		tb.Fatal(err)
	}
	return st
}

// storeHandler is a handler whose links live in st.
func storeHandler(st *store.Store, inv Invalidator) *Handler {
	return mustNew(Config{BaseURL: "http://sho.rt", Policy: NewURLPolicy("http://sho.rt", nil, nil, false)}, Deps{
		Links: st, Lister: st, Editor: st, BatchKeys: st, Exporter: st, Importer: st, Invalidator: inv,
		IDs:  &seqIDs{n: 1000},
		Keys: NewKeyring(nil, []string{"k3y"}, nil, time.Second, time.Now, nil), Log: discardLogger(),
	})
}

// heapPeak samples the heap's objects (live and not yet swept) every
// millisecond until stop is closed, and returns the largest sample.
func heapPeak(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-stop:
				out <- peak
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// TestImportLarge imports 100,000 rows against MariaDB, the file made as
// it is read (through a pipe, so the test holds none of it), and measures
// the heap meanwhile: an import holds a batch, not the file. The bound
// asserted is generous; the figure measured is logged (docs/api.md).
func TestImportLarge(t *testing.T) {
	const rows = 100_000
	st := realStore(t)
	h := storeHandler(st, nil)
	file := func(n int) io.Reader {
		pr, pw := io.Pipe()
		go func() {
			w := bufio.NewWriter(pw)
			fmt.Fprintln(w, "code,url,redirect,created_at,tags")
			for i := range n {
				fmt.Fprintf(w, "big%06d,https://example.com/some/path/%d?utm_source=import&n=%d,302,2025-01-02T03:04:05.000Z,bulk t%d\n", i, i, i, i%7)
			}
			pw.CloseWithError(w.Flush())
		}()
		return pr
	}
	post := func(body io.Reader) (int, importSummary) {
		req := httptest.NewRequest("POST", "/api/v1/links/import", body)
		req.Header.Set("Content-Type", "text/csv")
		req.Header.Set("X-Api-Key", "k3y")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var s importSummary
		_ = json.Unmarshal(rec.Body.Bytes(), &s)
		return rec.Code, s
	}

	runtime.GC()
	base := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(base)
	stop := make(chan struct{})
	peak := heapPeak(stop)
	start := time.Now()
	status, sum := post(file(rows))
	took := time.Since(start)
	close(stop)
	grew := int64(<-peak) - int64(base[0].Value.Uint64())
	t.Logf("imported %d rows in %s (%.0f rows/s); heap objects %.1f MiB before, peak %.1f MiB above it",
		sum.Created, took.Round(time.Millisecond), float64(rows)/took.Seconds(), float64(base[0].Value.Uint64())/(1<<20), float64(grew)/(1<<20))
	if status != 200 || sum.Rows != rows || sum.Created != rows || sum.Invalid != nil || sum.Conflicts != nil {
		t.Fatalf("import: %d %+v", status, sum)
	}
	const bound = 16 << 20
	if grew > bound {
		t.Errorf("the heap grew %d MiB during the import, past the %d MiB bound", grew>>20, bound>>20)
	}
	l, err := st.Link(context.Background(), "big099999")
	if err != nil || l.URL != "https://example.com/some/path/99999?utm_source=import&n=99999" || fmt.Sprint(l.Tags) != fmt.Sprintf("[bulk t%d]", 99999%7) || l.Owner != HashKey("k3y") {
		t.Errorf("the last row stored as %+v, %v", l, err)
	}
	// The same file again (its first 2,000 rows): nothing is created.
	if status, again := post(file(2000)); status != 200 || again.Created != 0 || again.Existing != 2000 {
		t.Errorf("a second import: %d %+v; want the 2,000 rows existing", status, again)
	}
}

// TestExportImportRoundTrip makes links through the API against MariaDB
// (creates, a batch and its retry, an edit, a delete), exports them, and
// imports the export into an empty database: exported again from there,
// every link is the same, but that a password-protected one is disabled
// without its password. Importing the JSON Lines export on top creates
// nothing.
func TestExportImportRoundTrip(t *testing.T) {
	ctx := context.Background()
	src := realStore(t)
	inv := &fakeInvalidator{}
	h := storeHandler(src, inv)
	call := func(h http.Handler, method, path, body string, header ...string) *httptest.ResponseRecorder {
		t.Helper()
		rec := do(h, method, path, body, append([]string{"X-Api-Key", "k3y"}, header...)...)
		if rec.Code >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		return rec
	}
	future := time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	call(h, "POST", "/api/v1/links", `{"url":"https://example.com/plain"}`)
	call(h, "POST", "/api/v1/links", `{"url":"https://example.com/all?a=1,2&b=\"q\"","alias":"all-fields","redirect":308,"expires_at":"`+future+`","tags":["Launch","q4"],"max_visits":9}`)
	call(h, "POST", "/api/v1/links", `{"url":"https://example.com/secret","alias":"locked","password":"s3cret"}`)
	call(h, "POST", "/api/v1/links", `{"url":"https://example.com/gone","alias":"gone-soon"}`)
	batch := `{"links":[{"url":"https://example.com/b1","alias":"batch-1","tags":["bulk"]},{"url":"https://example.com/b2"},{"url":"https://example.com/b3","alias":"all-fields"}]}`
	first := call(h, "POST", "/api/v1/links/batch", batch, "Idempotency-Key", "round-trip")
	retry := call(h, "POST", "/api/v1/links/batch", batch, "Idempotency-Key", "round-trip")
	if retry.Header().Get("Idempotent-Replayed") != "true" || retry.Body.String() != first.Body.String() {
		t.Errorf("batch retry:\n%s\nfirst:\n%s", retry.Body, first.Body)
	}
	if rec := do(h, "POST", "/api/v1/links/batch", `{"links":[{"url":"https://example.com/other"}]}`, "X-Api-Key", "k3y", "Idempotency-Key", "round-trip"); rec.Code != 422 {
		t.Errorf("another batch under the key: %d, want 422", rec.Code)
	}
	edited := call(h, "PATCH", "/api/v1/links/batch-1", `{"url":"https://example.com/b1-moved","disabled":true,"tags":["bulk","moved"],"max_visits":3}`)
	var e linkResponse
	_ = json.Unmarshal(edited.Body.Bytes(), &e)
	if e.URL != "https://example.com/b1-moved" || !e.Disabled || fmt.Sprint(e.Tags) != "[bulk moved]" || e.MaxVisits != 3 || e.UpdatedAt == nil {
		t.Errorf("edit answered %s", edited.Body)
	}
	if l, _ := src.Link(ctx, "batch-1"); l.URL != "https://example.com/b1-moved" || !l.Disabled || l.MaxVisits != 3 {
		t.Errorf("edit stored as %+v", l)
	}
	pending, _ := src.PendingInvalidations(ctx)
	if len(pending) != 1 || pending[0].Code != "batch-1" || fmt.Sprint(inv.codes) != "[batch-1]" {
		t.Errorf("after the edit: pending %v, invalidated %v; want batch-1 recorded and sent", pending, inv.codes)
	}
	call(h, "DELETE", "/api/v1/links/gone-soon", "")
	if rec := do(h, "PATCH", "/api/v1/links/gone-soon", `{"disabled":false}`, "X-Api-Key", "k3y"); rec.Code != 410 {
		t.Errorf("edit a deleted link: %d, want 410", rec.Code)
	}
	if rec := call(h, "GET", "/api/v1/links?q=B1-MOVED&tag=moved&order=oldest", ""); !strings.Contains(rec.Body.String(), `"code":"batch-1"`) {
		t.Errorf("search: %s", rec.Body)
	}

	exportCSV := call(h, "GET", "/api/v1/links/export?format=csv", "").Body.String()
	exportJSONL := call(h, "GET", "/api/v1/links/export?format=jsonl", "").Body.String()
	if n := strings.Count(exportCSV, "\n"); n != 1+5 {
		t.Fatalf("the export has %d lines, want a header and 5 links:\n%s", n, exportCSV)
	}

	dst := realStore(t)
	h2 := storeHandler(dst, nil)
	status, sum, body := importBody(t, h2, "text/csv", exportCSV)
	if status != 200 || sum.Created != 5 || sum.Invalid != nil || sum.Conflicts != nil || len(sum.Disabled) != 1 || sum.Disabled[0].Code != "locked" {
		t.Fatalf("import: %d %s", status, body)
	}
	again := call(h2, "GET", "/api/v1/links/export?format=csv", "").Body.String()
	// The password-protected link comes back disabled, without a password.
	want := strings.Replace(exportCSV, ",false,,,true,0\n", ",true,,,false,0\n", 1)
	if again != want || want == exportCSV {
		t.Errorf("exported again from the new database:\n%s\nwant:\n%s", again, exportCSV)
	}
	if status, sum, body := importBody(t, h2, "application/x-ndjson", exportJSONL); status != 200 || sum.Created != 0 || sum.Existing != 5 {
		t.Errorf("the JSON Lines export on top: %d %s; want the 5 links existing", status, body)
	}
}
