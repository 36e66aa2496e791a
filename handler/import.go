package handler

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"shortener"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// Importer stores links that exist nowhere yet.
type Importer interface {
	// InsertLinks inserts the links whose code and ID are both free and
	// returns, for each of links in order, the link its code holds
	// afterwards: itself (same ID) if it was inserted, another link if
	// the code was taken (deleted links included), the zero Link if
	// neither. Each statement commits on its own.
	InsertLinks(ctx context.Context, links []shortener.Link) ([]shortener.Link, error)
}

// Import bounds. What an import holds at once is one batch of rows and
// the summary's lists, whatever the file's length.
const (
	importBatch   = 500       // rows per InsertLinks call (one INSERT each)
	maxImportBody = 256 << 20 // bytes; past this the import stops with 413
	maxJSONLine   = 64 << 10  // bytes of one JSON Lines record
	maxReported   = 1000      // entries of each list of the summary; the rest are counted
	importsAtOnce = 2         // imports an instance runs at once; more are 429
)

// importSummary is the answer to an import.
type importSummary struct {
	Format   string `json:"format"`   // the format read: shortener, shlink, yourls or bitly
	Rows     int    `json:"rows"`     // rows read, the header left out
	Created  int    `json:"created"`  // links created
	Existing int    `json:"existing"` // rows whose code is already this key's link to the same URL
	// Rows not imported: their code is someone else's, a deleted
	// link's, or another URL's (conflicts); or they break a rule
	// (invalid). Disabled lists links created disabled, because the
	// password that protected them is not in any export.
	Conflicts        []importIssue `json:"conflicts"`
	ConflictsOmitted int           `json:"conflicts_omitted"`
	Invalid          []importIssue `json:"invalid"`
	InvalidOmitted   int           `json:"invalid_omitted"`
	Disabled         []importIssue `json:"disabled"`
	DisabledOmitted  int           `json:"disabled_omitted"`
}

// importIssue is one row the summary tells about: its number in the file
// (the header is row 1 of a CSV file; a JSON Lines file's rows are its
// lines), its code, and what became of it.
type importIssue struct {
	Row   int         `json:"row"`
	Code  string      `json:"code,omitempty"`
	Error errorDetail `json:"error"`
}

// note adds an issue to list, or counts it in omitted past maxReported.
func note(list *[]importIssue, omitted *int, issue importIssue) {
	if len(*list) < maxReported {
		*list = append(*list, issue)
	} else {
		*omitted++
	}
}

// importRow is one link as a file gives it, read but not yet checked.
type importRow struct {
	row              int
	code, url        string
	redirect         int
	created, expires time.Time
	disabled, locked bool // locked: password-protected where it came from
	tags             []string
	maxVisits        int64
	err              *Error // a field that does not parse
}

// rowReader reads an import file a row at a time; io.EOF ends it, and
// any other error ends the import.
type rowReader interface {
	next() (importRow, error)
}

// importLinks returns the handler of POST /api/v1/links/import, with its
// own bound on the imports running at once (each holds a batch of rows
// and a connection to MySQL for as long as its file takes to arrive).
func (h *Handler) importLinks() echo.HandlerFunc {
	running := make(chan struct{}, importsAtOnce)
	return func(c echo.Context) error {
		if h.d.Importer == nil {
			return &Error{Code: CodeNotFound, Message: "import is not available"}
		}
		select {
		case running <- struct{}{}:
			defer func() { <-running }()
		default:
			c.Response().Header().Set("Retry-After", "5")
			return &Error{Code: CodeRateLimited, Message: "this instance is running as many imports as it takes; retry after 5 s"}
		}
		return h.importFile(c)
	}
}

// importFile answers POST /api/v1/links/import: a CSV (text/csv) or JSON
// Lines (application/x-ndjson) file of links, read as it arrives and
// inserted importBatch rows per statement, for the calling key. Codes
// are kept; a code someone else holds is a conflict, and one this key
// holds for the same URL is "existing", so a second import of a file
// creates nothing. Imported links get new IDs; clicks are not imported
// (clicks are what this service counted). An error of MySQL midway is
// 503: what was created before it stays, and sending the file again
// completes it.
func (h *Handler) importFile(c echo.Context) error {
	mt, _, _ := mime.ParseMediaType(c.Request().Header.Get(echo.HeaderContentType))
	body := http.MaxBytesReader(c.Response(), c.Request().Body, maxImportBody)
	var (
		rows rowReader
		sum  importSummary
		err  error
	)
	switch mt {
	case "text/csv":
		rows, sum.Format, err = newCSVRows(body)
	case "application/x-ndjson", "application/jsonl":
		rows, sum.Format = newJSONLRows(body), "shortener"
	default:
		return &Error{Code: CodeMediaType, Message: "send the file as text/csv or application/x-ndjson"}
	}
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	rc := http.NewResponseController(c.Response())
	extend := func() {
		// Each batch moves the deadlines on: a large file takes longer
		// than the server's timeouts for one small request. (A test's
		// recorder has no deadlines to move.)
		_ = rc.SetReadDeadline(time.Now().Add(streamDeadline))
		_ = rc.SetWriteDeadline(time.Now().Add(streamDeadline))
	}
	extend()
	owner := callerOf(c).Owner
	now := h.d.Now().UTC().Truncate(time.Millisecond)
	type pendingRow struct {
		row    int
		link   shortener.Link
		locked bool
	}
	pending := make([]pendingRow, 0, importBatch)
	links := make([]shortener.Link, 0, importBatch)
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		links = links[:0]
		for _, p := range pending {
			links = append(links, p.link)
		}
		stored, err := h.d.Importer.InsertLinks(ctx, links)
		if err != nil {
			return err
		}
		for i, p := range pending {
			s := stored[i]
			issue := importIssue{Row: p.row, Code: p.link.Code}
			switch {
			case s.ID == p.link.ID:
				sum.Created++
				if p.locked {
					issue.Error = errorDetail{Code: CodeInvalidRequest, Field: "password",
						Message: "the link was password-protected and no export holds its password: it is created disabled; set a password and enable it (PATCH)"}
					note(&sum.Disabled, &sum.DisabledOmitted, issue)
				}
			case s.ID == 0: // its fresh ID was taken: never, unless node IDs are shared
				issue.Error = errorDetail{Code: CodeInternal, Message: "the link's new ID was taken; send the file again"}
				note(&sum.Invalid, &sum.InvalidOmitted, issue)
			case s.Owner == owner && s.URL == p.link.URL && s.DeletedAt.IsZero():
				sum.Existing++
			default:
				why := "another API key's link has this code"
				switch {
				case s.Owner == owner && !s.DeletedAt.IsZero():
					why = "a link of yours that was deleted had this code; codes are never reused"
				case s.Owner == owner:
					why = "a link of yours has this code, to " + s.URL
				case !s.DeletedAt.IsZero():
					why = "a deleted link had this code; codes are never reused"
				}
				issue.Error = errorDetail{Code: CodeAliasTaken, Field: "code", Message: why}
				note(&sum.Conflicts, &sum.ConflictsOmitted, issue)
			}
		}
		pending = pending[:0]
		extend()
		return nil
	}
	for {
		r, err := rows.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		sum.Rows++
		l, bad := h.importLink(r, owner, now)
		if bad != nil {
			note(&sum.Invalid, &sum.InvalidOmitted, importIssue{Row: r.row, Code: r.code, Error: detailOf(*bad)})
			continue
		}
		if pending = append(pending, pendingRow{row: r.row, link: l, locked: r.locked}); len(pending) == importBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, sum)
}

// importLink checks r by the rules of a create, except that its code is
// kept (it must pass as an alias), its times are kept (an expiry in the
// past included: such a link is 410, as it was), and a link that was
// password-protected is created disabled. The error names the field at
// fault.
func (h *Handler) importLink(r importRow, owner string, now time.Time) (shortener.Link, *Error) {
	if r.err != nil {
		return shortener.Link{}, r.err
	}
	if r.code == "" {
		return shortener.Link{}, &Error{Code: CodeInvalidAlias, Field: "code", Message: "the row has no code"}
	}
	if err := h.validateAlias(r.code); err != nil {
		e := toHTTP(err)
		e.Field = "code"
		return shortener.Link{}, &e
	}
	u, err := h.policy.Validate(r.url)
	if err != nil {
		e := toHTTP(err)
		return shortener.Link{}, &e
	}
	l := shortener.Link{Code: r.code, URL: u, Redirect: r.redirect, CreatedAt: r.created, ExpiresAt: r.expires,
		Disabled: r.disabled || r.locked, MaxVisits: r.maxVisits, Owner: owner}
	if l.Redirect == 0 {
		l.Redirect = http.StatusFound
	} else if !validRedirect(l.Redirect) {
		return shortener.Link{}, &Error{Code: CodeInvalidRequest, Field: "redirect", Message: fmt.Sprintf("redirect %d is not one of 301, 302, 307, 308", l.Redirect)}
	}
	if l.Tags, err = normalizeTags(r.tags); err != nil {
		e := toHTTP(err)
		return shortener.Link{}, &e
	}
	if l.MaxVisits < 0 {
		return shortener.Link{}, &Error{Code: CodeInvalidRequest, Field: "max_visits", Message: "max_visits must be a positive whole number"}
	}
	if l.CreatedAt.IsZero() {
		l.CreatedAt = now
	}
	// Stored to the millisecond: what an export reads back.
	l.CreatedAt, l.ExpiresAt = l.CreatedAt.UTC().Truncate(time.Millisecond), l.ExpiresAt.UTC().Truncate(time.Millisecond)
	l.ID, _ = h.d.IDs.Next()
	return l, nil
}

// csvFormat is a CSV export this service reads: the header names that
// tell it apart, and for each field of a link the columns it may be in
// (headers as normalized by headerKey), the first non-empty one winning.
type csvFormat struct {
	name    string
	detect  func(has func(string) bool) bool
	columns map[string][]string
	code    func(string) string // the code as the column writes it, to a code
}

// Fields of importRow that CSV columns fill.
const (
	fCode, fURL, fRedirect, fCreated, fExpires = "code", "url", "redirect", "created", "expires"
	fDisabled, fLocked, fTags, fMaxVisits      = "disabled", "locked", "tags", "max_visits"
)

// csvFormats are the formats an import recognises, in the order they are
// tried; docs/api.md lists the columns each is read from. Headers are
// compared as headerKey leaves them (case, spaces, '_' and '-' aside).
var csvFormats = []csvFormat{
	{
		// This service's own export (exportColumns).
		name:   "shortener",
		detect: func(has func(string) bool) bool { return has("code") && has("url") },
		columns: map[string][]string{fCode: {"code"}, fURL: {"url"}, fRedirect: {"redirect"}, fCreated: {"createdat"},
			fExpires: {"expiresat"}, fDisabled: {"disabled"}, fTags: {"tags"}, fMaxVisits: {"maxvisits"}, fLocked: {"passwordprotected"}},
	},
	{
		// Shlink's web client: createdAt, domain, shortCode, shortUrl,
		// longUrl, title, tags (joined with '|'), visits.
		name:    "shlink",
		detect:  func(has func(string) bool) bool { return has("shortcode") && has("longurl") },
		columns: map[string][]string{fCode: {"shortcode"}, fURL: {"longurl"}, fCreated: {"createdat", "datecreated"}, fTags: {"tags"}},
	},
	{
		// YOURLS' table of links (yourls_url, as a database tool exports
		// it): keyword, url, title, timestamp, ip, clicks.
		name:    "yourls",
		detect:  func(has func(string) bool) bool { return has("keyword") && has("url") },
		columns: map[string][]string{fCode: {"keyword"}, fURL: {"url"}, fCreated: {"timestamp"}},
	},
	{
		// The YOURLS Import/Export plugin: source ("/keyword/"), target,
		// hits.
		name:    "yourls",
		detect:  func(has func(string) bool) bool { return has("source") && has("target") },
		columns: map[string][]string{fCode: {"source"}, fURL: {"target"}},
		code:    func(s string) string { return strings.Trim(s, "/") },
	},
	{
		// Bitly's exports: the dashboard's (Title, Link, Custom Link,
		// Destination URL, Date Created, Tags, …) and the API's links
		// list (link, long_url, title, created_at, tags, …). The code is
		// the custom back-half if the link has one, else the Bitlink's.
		name:   "bitly",
		detect: func(has func(string) bool) bool { return has("longurl") || has("destinationurl") },
		columns: map[string][]string{fCode: {"customlink", "custombitlink", "link", "bitlink"}, fURL: {"longurl", "destinationurl"},
			fCreated: {"createdat", "datecreated", "created"}, fTags: {"tags"}},
		code: lastSegment,
	},
}

// headerKey is how a CSV header is compared: lower case, without spaces,
// '_' and '-' (so "Date Created", "date_created" and "dateCreated" are
// one), and without a byte order mark.
func headerKey(h string) string {
	h = strings.TrimPrefix(h, "\ufeff")
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '_' || r == '-' {
			return -1
		}
		return r
	}, strings.ToLower(strings.TrimSpace(h)))
}

// lastSegment is the code of a short link written as a URL or
// host/path: its path's last segment ("bit.ly/3xYz" → "3xYz").
func lastSegment(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	s, _, _ = strings.Cut(s, "?")
	s = strings.TrimRight(s, "/")
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return "" // a host alone: no code
}

// csvRows reads a CSV import.
type csvRows struct {
	r      *csv.Reader
	f      csvFormat
	cols   map[string][]int // field → the columns it may be read from
	record int              // records read, the header included
}

// newCSVRows reads the header of a CSV import and recognises its format.
func newCSVRows(body io.Reader) (*csvRows, string, error) {
	r := csv.NewReader(bufio.NewReaderSize(body, 64<<10))
	r.FieldsPerRecord = -1 // rows may be short; a missing column is empty
	r.LazyQuotes = true    // a stray quote in a title is not worth an import
	r.ReuseRecord = true
	header, err := r.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, "", &Error{Code: CodeInvalidRequest, Message: "the file is empty: send a header row, then a row per link"}
		}
		return nil, "", readError(err)
	}
	index := map[string]int{}
	for i, name := range header {
		if k := headerKey(name); k != "" {
			if _, dup := index[k]; !dup {
				index[k] = i
			}
		}
	}
	has := func(k string) bool { _, ok := index[k]; return ok }
	for _, f := range csvFormats {
		if !f.detect(has) {
			continue
		}
		cr := &csvRows{r: r, f: f, cols: map[string][]int{}, record: 1}
		for field, names := range f.columns {
			for _, n := range names {
				if i, ok := index[n]; ok {
					cr.cols[field] = append(cr.cols[field], i)
				}
			}
		}
		return cr, f.name, nil
	}
	return nil, "", &Error{Code: CodeInvalidRequest, Message: "the header row is not one of an export of this service (code, url, …), Shlink (shortCode, longUrl, …), YOURLS (keyword, url, … or source, target, …) or Bitly (long_url or Destination URL, link, …)"}
}

func (cr *csvRows) next() (importRow, error) {
	rec, err := cr.r.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return importRow{}, io.EOF
		}
		return importRow{}, readError(err)
	}
	cr.record++
	field := func(name string) string {
		for _, i := range cr.cols[name] {
			if i < len(rec) {
				if v := strings.TrimSpace(rec[i]); v != "" {
					return v
				}
			}
		}
		return ""
	}
	r := importRow{row: cr.record, code: field(fCode), url: field(fURL), tags: splitTags(field(fTags))}
	if cr.f.code != nil {
		r.code = cr.f.code(r.code)
	}
	bad := func(name, format string, args ...any) (importRow, error) {
		r.err = fieldErrorf(CodeInvalidRequest, name, format, args...)
		return r, nil
	}
	var ok bool
	if v := field(fRedirect); v != "" {
		if r.redirect, err = strconv.Atoi(v); err != nil {
			return bad("redirect", "redirect %q is not a number", v)
		}
	}
	if v := field(fMaxVisits); v != "" {
		if r.maxVisits, err = strconv.ParseInt(v, 10, 64); err != nil {
			return bad("max_visits", "max_visits %q is not a whole number", v)
		}
	}
	if r.created, ok = importTime(field(fCreated)); !ok {
		return bad("created_at", "created_at %q is not a time", field(fCreated))
	}
	if r.expires, ok = importTime(field(fExpires)); !ok {
		return bad("expires_at", "expires_at %q is not a time", field(fExpires))
	}
	for name, dst := range map[string]*bool{fDisabled: &r.disabled, fLocked: &r.locked} {
		if v := field(name); v != "" {
			if *dst, err = strconv.ParseBool(v); err != nil {
				return bad(name, "%s %q is not true or false", name, v)
			}
		}
	}
	return r, nil
}

// importTime reads a time as the exports write them: RFC 3339 (ours,
// Shlink's, Bitly's API, with or without a colon in the offset), a
// date and time without a zone (YOURLS; taken as UTC) or a date alone.
// "" is the zero time.
func importTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, true
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05Z0700", "2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// readError is the answer to a file that cannot be read on: too large
// (413, as MaxBytesReader says) or not CSV at all.
func readError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return err
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf("the file is not CSV past line %d: %v", pe.Line, pe.Err)}
	}
	return &Error{Code: CodeInvalidRequest, Message: "the file could not be read: " + err.Error()}
}

// jsonlRows reads a JSON Lines import: this service's export, a JSON
// object per line (exportRecord; other members are ignored).
type jsonlRows struct {
	s    *bufio.Scanner
	line int
}

func newJSONLRows(body io.Reader) *jsonlRows {
	s := bufio.NewScanner(body)
	s.Buffer(make([]byte, 0, 64<<10), maxJSONLine)
	return &jsonlRows{s: s}
}

func (jr *jsonlRows) next() (importRow, error) {
	for jr.s.Scan() {
		jr.line++
		line := bytes.TrimSpace(jr.s.Bytes())
		if len(line) == 0 {
			continue
		}
		r := importRow{row: jr.line}
		var rec exportRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			r.err = jsonLineError(line, jr.line)
			return r, nil
		}
		r.code, r.url, r.redirect, r.created = rec.Code, rec.URL, rec.Redirect, rec.CreatedAt
		r.disabled, r.locked, r.tags = rec.Disabled, rec.PasswordProtected, rec.Tags
		if rec.ExpiresAt != nil {
			r.expires = *rec.ExpiresAt
		}
		if rec.MaxVisits != nil {
			r.maxVisits = *rec.MaxVisits
		}
		return r, nil
	}
	if err := jr.s.Err(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return importRow{}, err
		}
		if errors.Is(err, bufio.ErrTooLong) {
			return importRow{}, &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf("line %d is longer than %d bytes", jr.line+1, maxJSONLine)}
		}
		return importRow{}, &Error{Code: CodeInvalidRequest, Message: "the file could not be read: " + err.Error()}
	}
	return importRow{}, io.EOF
}

// jsonLineError says what is wrong with a JSON Lines record that does not
// decode, in the API's words: not an object, or which member is not of
// its type. Members the export does not have are ignored.
func jsonLineError(line []byte, n int) *Error {
	var members map[string]json.RawMessage
	if json.Unmarshal(line, &members) != nil {
		return &Error{Code: CodeInvalidJSON, Message: fmt.Sprintf("line %d is not a JSON object", n)}
	}
	fields := jsonFields(&exportRecord{})
	for _, name := range exportColumns { // in a stable order
		raw, ok := members[name]
		if !ok {
			continue
		}
		if json.Unmarshal(raw, reflect.New(fields[name]).Interface()) != nil {
			return &Error{Code: CodeInvalidJSON, Field: name, Message: fmt.Sprintf("field %q must be %s", name, jsonKind(fields[name]))}
		}
	}
	return &Error{Code: CodeInvalidJSON, Message: fmt.Sprintf("line %d is not a link of an export", n)}
}
