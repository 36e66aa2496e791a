package handler

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"shortener"
	"slices"
	"strings"
	"testing"
	"time"
)

var _ Lister = (*fakeLinks)(nil)

// SearchLinks filters the fake's links as the store does.
func (f *fakeLinks) SearchLinks(_ context.Context, owner, match, tag string, from, to time.Time, cursor int64, oldest bool, limit int) ([]shortener.Link, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	out := []shortener.Link{}
	for _, l := range f.links {
		switch {
		case l.Owner != owner || !l.DeletedAt.IsZero():
		case cursor != 0 && !oldest && l.ID >= cursor, cursor != 0 && oldest && l.ID <= cursor:
		case match != "" && !strings.Contains(l.Code, match) && !strings.Contains(strings.ToLower(l.URL), strings.ToLower(match)):
		case tag != "" && !slices.Contains(l.Tags, tag):
		case !from.IsZero() && !l.CreatedAt.After(from), !to.IsZero() && !l.CreatedAt.Before(to):
		default:
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b shortener.Link) int {
		if oldest {
			return cmp.Compare(a.ID, b.ID)
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return out[:min(limit, len(out))], nil
}

func TestNormalizeTags(t *testing.T) {
	many := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("t%d", i))
		}
		return out
	}
	for _, tt := range []struct {
		name string
		in   []string
		want []string
		bad  bool
	}{
		{name: "none", in: nil, want: nil},
		{name: "empty list", in: []string{}, want: nil},
		{name: "lower-cased, sorted, deduplicated", in: []string{"Q4", "launch", "q4", "a_b-1"}, want: []string{"a_b-1", "launch", "q4"}},
		{name: "32 characters", in: []string{strings.Repeat("x", 32)}, want: []string{strings.Repeat("x", 32)}},
		{name: "33 characters", in: []string{strings.Repeat("x", 33)}, bad: true},
		{name: "empty tag", in: []string{""}, bad: true},
		{name: "space", in: []string{"a b"}, bad: true},
		{name: "dot", in: []string{"v1.2"}, bad: true},
		{name: "not ASCII", in: []string{"été"}, bad: true},
		{name: "ten", in: many(10), want: slices.Sorted(slices.Values(many(10)))},
		{name: "eleven", in: many(11), bad: true},
		{name: "eleven with a duplicate", in: append(many(10), "T3"), want: slices.Sorted(slices.Values(many(10)))},
	} {
		got, err := normalizeTags(tt.in)
		switch {
		case tt.bad && err == nil:
			t.Errorf("%s: got %v, want an error", tt.name, got)
		case tt.bad:
			if e := toHTTP(err); e.Code != CodeInvalidRequest || e.Field != "tags" {
				t.Errorf("%s: got %+v, want invalid_request about tags", tt.name, e)
			}
		case err != nil || !slices.Equal(got, tt.want) || (got == nil) != (tt.want == nil):
			t.Errorf("%s: got %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

func TestSplitTags(t *testing.T) {
	for in, want := range map[string][]string{
		"":                  nil,
		"a b":               {"a", "b"},
		"a|b|c":             {"a", "b", "c"},
		"a, b;c":            {"a", "b", "c"},
		" launch ,, q4 ":    {"launch", "q4"},
		"has.dot,and space": {"has.dot", "and", "space"},
	} {
		if got := splitTags(in); !slices.Equal(got, want) {
			t.Errorf("splitTags(%q): got %q, want %q", in, got, want)
		}
	}
}

// TestSearch lists a key's links with every filter of GET /api/v1/links,
// page by page in both orders, and refuses bad parameters with the field
// at fault.
func TestSearch(t *testing.T) {
	f := newFakeLinks()
	k := HashKey("k3y")
	for i, l := range []shortener.Link{
		{Code: "launch1", URL: "https://Example.com/Launch", Tags: []string{"launch", "q4"}},
		{Code: "docs2", URL: "https://docs.example.org/", Tags: []string{"docs"}},
		{Code: "shop3", URL: "https://shop.example.net/launch-sale", Tags: []string{"q4"}},
		{Code: "other4", URL: "https://example.com/launch", Owner: HashKey("other-k3y"), Tags: []string{"launch"}},
	} {
		l.ID, l.Redirect, l.CreatedAt = int64(i+1), 302, now.Add(time.Duration(i)*time.Hour)
		if l.Owner == "" {
			l.Owner = k
		}
		f.links[l.Code] = l
	}
	h := newTestHandler(f)
	list := func(query string) ([]string, string, int) {
		t.Helper()
		rec := do(h, "GET", "/api/v1/links?"+query, "", "X-Api-Key", "k3y")
		var body struct {
			Links []linkResponse `json:"links"`
			Next  string         `json:"next_cursor"`
		}
		if rec.Code == 200 {
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
		}
		var codes []string
		for _, l := range body.Links {
			codes = append(codes, l.Code)
		}
		return codes, body.Next, rec.Code
	}
	for _, tt := range []struct {
		query string
		want  string
	}{
		{"", "[shop3 docs2 launch1]"},
		{"order=newest", "[shop3 docs2 launch1]"},
		{"order=oldest", "[launch1 docs2 shop3]"},
		{"q=LAUNCH", "[shop3 launch1]"},
		{"q=docs2", "[docs2]"},
		{"tag=Q4", "[shop3 launch1]"},
		{"tag=q4&q=shop", "[shop3]"},
		{"created_after=" + url.QueryEscape(now.Format(time.RFC3339)), "[shop3 docs2]"},
		{"created_before=" + url.QueryEscape(now.Add(2*time.Hour).Format(time.RFC3339)), "[docs2 launch1]"},
	} {
		if got, _, status := list(tt.query); status != 200 || fmt.Sprint(got) != tt.want {
			t.Errorf("?%s: got %d %v, want %s", tt.query, status, got, tt.want)
		}
	}
	for _, order := range []string{"newest", "oldest"} {
		var all []string
		cursor := ""
		for range 5 {
			page, next, status := list("limit=1&order=" + order + cursor)
			if status != 200 {
				t.Fatalf("order %s: %d", order, status)
			}
			all = append(all, page...)
			if next == "" {
				break
			}
			cursor = "&cursor=" + next
		}
		if want := map[string]string{"newest": "[shop3 docs2 launch1]", "oldest": "[launch1 docs2 shop3]"}[order]; fmt.Sprint(all) != want {
			t.Errorf("pages in order %s: got %v, want %s", order, all, want)
		}
	}
	for query, field := range map[string]string{
		"q=" + strings.Repeat("x", maxQuery+1): "q",
		"tag=a.b":                              "tag",
		"tag=" + strings.Repeat("x", 33):       "tag",
		"created_after=yesterday":              "created_after",
		"created_before=2026-13-01T00:00:00Z":  "created_before",
		"order=random":                         "order",
	} {
		rec := do(h, "GET", "/api/v1/links?"+query, "", "X-Api-Key", "k3y")
		var b errorBody
		_ = json.Unmarshal(rec.Body.Bytes(), &b)
		if rec.Code != 400 || b.Error.Code != CodeInvalidRequest || b.Error.Field != field {
			t.Errorf("?%.40s: got %d %s, want 400 invalid_request about %s", query, rec.Code, rec.Body, field)
		}
	}
}
