package handler

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"net/http"
	"shortener"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// Exporter reads every link a key owns, with its clicks.
type Exporter interface {
	// ExportLinks calls fn with every link of owner not deleted, oldest
	// first, and its clicks counted so far, a page at a time, never
	// holding a query open while fn runs. fn's error ends it and is
	// returned as it is.
	ExportLinks(ctx context.Context, owner string, fn func(l shortener.Link, clicks int64) error) error
}

// exportColumns are the export's fields, in the CSV's order; an import
// reads them back (import.go). Never the password's hash.
var exportColumns = []string{"code", "short_url", "url", "redirect", "created_at", "expires_at",
	"disabled", "tags", "max_visits", "password_protected", "clicks"}

// exportRecord is one link of a JSON Lines export (and import).
type exportRecord struct {
	Code              string     `json:"code"`
	ShortURL          string     `json:"short_url"`
	URL               string     `json:"url"`
	Redirect          int        `json:"redirect"`
	CreatedAt         time.Time  `json:"created_at"`
	ExpiresAt         *time.Time `json:"expires_at"`
	Disabled          bool       `json:"disabled"`
	Tags              []string   `json:"tags"`
	MaxVisits         *int64     `json:"max_visits"`
	PasswordProtected bool       `json:"password_protected"`
	Clicks            int64      `json:"clicks"`
}

// exportTime is how an export writes times: RFC 3339 in UTC with the
// milliseconds links are stored with, so an import reads back the same
// instant.
const exportTime = "2006-01-02T15:04:05.000Z07:00"

// exportFlush is how many links an export writes between flushes to the
// client: what it holds in memory is a page of the store's (500 links)
// and this many written rows, however many links there are.
const exportFlush = 500

// streamDeadline is how long a streamed export or import may go without
// progress: each page written (or batch read) moves the connection's
// deadlines this far ahead, in place of the server's, which are for
// one small request.
const streamDeadline = 60 * time.Second

// export answers GET /api/v1/links/export?format=csv|jsonl: every link
// the key owns (an admin key's own too), not deleted, oldest first, with
// its clicks, streamed. The status and headers are sent with the first
// page; an error after that cannot be an answer any more, so the
// connection is cut instead, and the client sees a transfer that did not
// end (never a short file that looks whole).
func (h *Handler) export(c echo.Context) error {
	if h.d.Exporter == nil {
		return &Error{Code: CodeNotFound, Message: "export is not available"}
	}
	format := c.QueryParam("format")
	var contentType string
	switch format {
	case "", "csv":
		format, contentType = "csv", "text/csv; charset=utf-8"
	case "jsonl":
		contentType = "application/x-ndjson"
	default:
		return fieldErrorf(CodeInvalidRequest, "format", "format must be csv or jsonl")
	}
	w := c.Response()
	rc := http.NewResponseController(w)
	extend := func() {
		// A recorder in tests has no deadlines: nothing to extend.
		_ = rc.SetWriteDeadline(time.Now().Add(streamDeadline))
	}
	started := false
	start := func() {
		started = true
		extend()
		hd := w.Header()
		hd.Set(echo.HeaderContentType, contentType)
		hd.Set(echo.HeaderContentDisposition, `attachment; filename="links.`+format+`"`)
		hd.Set("Cache-Control", "private, no-store")
		w.WriteHeader(http.StatusOK)
	}
	var (
		cw   *csv.Writer
		enc  *json.Encoder
		rows int
	)
	if format == "csv" {
		cw = csv.NewWriter(w)
	} else {
		enc = json.NewEncoder(w)
	}
	flush := func() error {
		if cw != nil {
			cw.Flush()
			if err := cw.Error(); err != nil {
				return err
			}
		}
		extend()
		return rc.Flush()
	}
	err := h.d.Exporter.ExportLinks(c.Request().Context(), callerOf(c).Owner, func(l shortener.Link, clicks int64) error {
		if !started {
			start()
			if cw != nil {
				if err := cw.Write(exportColumns); err != nil {
					return err
				}
			}
		}
		r := h.exportRecord(l, clicks)
		var err error
		if cw != nil {
			err = cw.Write(r.csv())
		} else {
			err = enc.Encode(r)
		}
		if err != nil {
			return err
		}
		if rows++; rows%exportFlush == 0 {
			return flush()
		}
		return nil
	})
	switch {
	case err != nil && !started:
		return err
	case err != nil:
		h.log.Warn("export cut short", "err", err, "rows", rows)
		if !errors.Is(err, context.Canceled) {
			panic(http.ErrAbortHandler) // frame lets net/http cut the connection
		}
		return nil
	case !started: // no links: a header only (CSV) or an empty body (JSON Lines)
		start()
		if cw != nil {
			if err := cw.Write(exportColumns); err != nil {
				return nil
			}
		}
	}
	if err := flush(); err != nil {
		h.log.Warn("export: final flush", "err", err)
	}
	return nil
}

// exportRecord is l as an export shows it.
func (h *Handler) exportRecord(l shortener.Link, clicks int64) exportRecord {
	r := h.response(l)
	rec := exportRecord{Code: r.Code, ShortURL: r.ShortURL, URL: r.URL, Redirect: r.Redirect, CreatedAt: r.CreatedAt,
		ExpiresAt: r.ExpiresAt, Disabled: r.Disabled, Tags: r.Tags, PasswordProtected: r.PasswordProtected, Clicks: clicks}
	if l.MaxVisits != 0 {
		rec.MaxVisits = &l.MaxVisits
	}
	return rec
}

// csv is r as a row of exportColumns: times as exportTime, "" for no
// expiry or limit, tags separated by spaces.
func (r exportRecord) csv() []string {
	exp, maxVisits := "", ""
	if r.ExpiresAt != nil {
		exp = r.ExpiresAt.UTC().Format(exportTime)
	}
	if r.MaxVisits != nil {
		maxVisits = strconv.FormatInt(*r.MaxVisits, 10)
	}
	return []string{r.Code, r.ShortURL, r.URL, strconv.Itoa(r.Redirect), r.CreatedAt.UTC().Format(exportTime), exp,
		strconv.FormatBool(r.Disabled), strings.Join(r.Tags, " "), maxVisits, strconv.FormatBool(r.PasswordProtected),
		strconv.FormatInt(r.Clicks, 10)}
}

// MarshalJSON writes times as exportTime, like the CSV.
func (r exportRecord) MarshalJSON() ([]byte, error) {
	type plain exportRecord
	out := struct {
		plain
		CreatedAt string  `json:"created_at"`
		ExpiresAt *string `json:"expires_at"`
	}{plain: plain(r), CreatedAt: r.CreatedAt.UTC().Format(exportTime)}
	if r.ExpiresAt != nil {
		s := r.ExpiresAt.UTC().Format(exportTime)
		out.ExpiresAt = &s
	}
	return json.Marshal(out)
}
