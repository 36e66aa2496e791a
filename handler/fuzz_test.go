package handler

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzValidateURL checks the promises of URLPolicy.Validate on any input:
// it never panics; what it accepts is a short, absolute http(s) URL with a
// host, no credentials, no control characters, not the shortener itself;
// accepting is idempotent; what it rejects gets a 400 with a code.
func FuzzValidateURL(f *testing.F) {
	for _, s := range []string{"https://example.com/x", "http://bücher.example:8080/a?b#c", "javascript:alert(1)",
		"https://u:p@example.com", "http://sho.rt/x", "https://[::1]:80/", "//x", "https://a.evil.example/", "\x00", ""} {
		f.Add(s)
	}
	p := NewURLPolicy("http://sho.rt", nil, []string{"evil.example"}, false)
	f.Fuzz(func(t *testing.T, raw string) {
		out, err := p.Validate(raw)
		if err != nil {
			var he *Error
			if !errors.As(err, &he) || he.Status() != 400 || he.Code == "" {
				t.Fatalf("Validate(%q) error %v is not a 400 with a code", raw, err)
			}
			return
		}
		u, perr := url.Parse(out)
		switch {
		case perr != nil:
			t.Fatalf("accepted %q as %q, which does not parse: %v", raw, out, perr)
		case len(out) > MaxURLLen || !utf8.ValidString(out):
			t.Fatalf("accepted %q as %q: too long or not UTF-8", raw, out)
		case u.Scheme != "http" && u.Scheme != "https", u.Host == "", u.User != nil:
			t.Fatalf("accepted %q as %q: scheme %q host %q user %v", raw, out, u.Scheme, u.Host, u.User)
		case strings.ContainsFunc(out, func(r rune) bool { return r <= ' ' || r == 0x7f }):
			t.Fatalf("accepted %q as %q, which holds a control character", raw, out)
		case strings.EqualFold(u.Hostname(), "sho.rt"):
			t.Fatalf("accepted a loop: %q", out)
		}
		again, err := p.Validate(out)
		if err != nil || again != out {
			t.Fatalf("Validate is not idempotent: %q -> %q -> %q, %v", raw, out, again, err)
		}
	})
}

// FuzzValidateAlias checks that an accepted alias is 3 to 64 characters of
// the alias alphabet and not reserved, and that a rejection has its code.
func FuzzValidateAlias(f *testing.F) {
	for _, s := range []string{"abc", "My_Link-1", "api", "ab", "a/b", "é-x", strings.Repeat("z", 65)} {
		f.Add(s)
	}
	h := mustNew(Config{Pages: true}, Deps{Log: discardLogger()})
	f.Fuzz(func(t *testing.T, a string) {
		err := h.validateAlias(a)
		if err != nil {
			var he *Error
			if !errors.As(err, &he) || he.Code != CodeInvalidAlias {
				t.Fatalf("validateAlias(%q) = %v, want %s", a, err, CodeInvalidAlias)
			}
			return
		}
		if len(a) < minAlias || len(a) > maxAlias || !plausibleCode(a) {
			t.Fatalf("accepted alias %q", a)
		}
		for _, r := range h.reserved {
			if strings.EqualFold(a, r) {
				t.Fatalf("accepted reserved alias %q", a)
			}
		}
	})
}
