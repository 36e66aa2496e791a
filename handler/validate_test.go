package handler

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

func TestValidateURL(t *testing.T) {
	long := "https://example.com/" + strings.Repeat("a", MaxURLLen-len("https://example.com/"))
	tests := []struct {
		name string
		in   string
		want string // the stored form, or the error code of the rejection
	}{
		{"plain https", "https://example.com/x", "https://example.com/x"},
		{"plain http", "http://example.com", "http://example.com"},
		{"query and fragment", "https://example.com/a?b=c&d=e#f", "https://example.com/a?b=c&d=e#f"},
		{"upper-case scheme", "HTTPS://example.com/", "https://example.com/"},
		{"upper-case host", "https://EXAMPLE.com/P", "https://example.com/P"},
		{"port", "https://example.com:8443/x", "https://example.com:8443/x"},
		{"highest port", "http://example.com:65535/", "http://example.com:65535/"},
		{"IPv4", "http://192.0.2.1/", "http://192.0.2.1/"},
		{"IPv6", "http://[2001:db8::1]:8080/", "http://[2001:db8::1]:8080/"},
		{"IDN host to punycode", "https://bücher.example/buch", "https://xn--bcher-kva.example/buch"},
		{"IDN host with port", "https://bücher.example:8080/", "https://xn--bcher-kva.example:8080/"},
		{"punycode host kept", "https://xn--bcher-kva.example/", "https://xn--bcher-kva.example/"},
		{"exactly at the limit", long, long},

		{"empty", "", "!" + CodeInvalidURL},
		{"javascript", "javascript:alert(1)", "!" + CodeURLScheme},
		{"javascript upper", "JaVaScRiPt:alert(1)", "!" + CodeURLScheme},
		{"data", "data:text/html,<script>alert(1)</script>", "!" + CodeURLScheme},
		{"ftp", "ftp://example.com/f", "!" + CodeURLScheme},
		{"mailto", "mailto:a@example.com", "!" + CodeURLScheme},
		{"relative path", "/local/path", "!" + CodeInvalidURL},
		{"relative no slash", "example.com/x", "!" + CodeInvalidURL},
		{"scheme-relative", "//example.com/x", "!" + CodeInvalidURL},
		{"no host", "https:///path", "!" + CodeInvalidURL},
		{"opaque", "https:example.com", "!" + CodeInvalidURL},
		{"leading space", " https://example.com", "!" + CodeURLControlChars},
		{"trailing newline", "https://example.com\n", "!" + CodeURLControlChars},
		{"inner space", "https://example.com/a b", "!" + CodeURLControlChars},
		{"tab", "https://exa\tmple.com", "!" + CodeURLControlChars},
		{"NUL", "https://example.com/\x00", "!" + CodeURLControlChars},
		{"C1 control", "https://example.com/\u0085", "!" + CodeURLControlChars},
		{"over-long", long + "a", "!" + CodeURLTooLong},
		{"non-UTF-8", "https://example.com/\xff\xfe", "!" + CodeInvalidURL},
		{"port zero", "https://example.com:0/", "!" + CodeInvalidURL},
		{"port too big", "https://example.com:65536/", "!" + CodeInvalidURL},
		{"port not a number", "https://example.com:http/", "!" + CodeInvalidURL},
		{"empty port", "https://example.com:/", "!" + CodeInvalidURL},
		{"invalid IDN", "https://xn--a.example/", "!" + CodeInvalidURL},
		{"bad percent escape", "https://example.com/%zz", "!" + CodeInvalidURL},
		{"user and password", "https://user:pw@example.com/", "!" + CodeURLCredentials},
		{"user only", "https://bank.example@evil.example/", "!" + CodeURLCredentials},
		{"loop to own host", "http://sho.rt/abc", "!" + CodeURLLoop},
		{"loop, upper case", "https://SHO.RT:443/abc", "!" + CodeURLLoop},
		{"loop to extra self host", "https://go.example/x", "!" + CodeURLLoop},
		{"denied host", "https://evil.example/", "!" + CodeURLDenied},
		{"denied subdomain", "https://a.b.evil.example/", "!" + CodeURLDenied},
		{"lookalike of denied is fine", "https://notevil.example/", "https://notevil.example/"},

		// Issue 16: the base URL http://127.0.0.1:8080 in every spelling,
		// other local addresses, subdomains of self hosts, trailing dots.
		{"localhost", "http://localhost:8080/x", "!" + CodeURLDenied},
		{"localhost subdomain", "http://foo.localhost/", "!" + CodeURLDenied},
		{"decimal IPv4", "http://2130706433:8080/", "!" + CodeURLLoop},
		{"hex short IPv4", "http://0x7f.1/", "!" + CodeURLLoop},
		{"short IPv4", "http://127.1/", "!" + CodeURLLoop},
		{"octal IPv4", "http://0177.0.0.1/", "!" + CodeURLLoop},
		{"hex whole IPv4", "http://0x7F000001/", "!" + CodeURLLoop},
		{"IPv4 trailing dot", "http://127.0.0.1./", "!" + CodeURLLoop},
		{"full-width IPv4", "http://１２７．０．０．１/", "!" + CodeURLLoop},
		{"percent-encoded IPv4", "http://%31%32%37.0.0.1/", "!" + CodeInvalidURL},
		{"other loopback", "http://127.0.0.2/", "!" + CodeURLDenied},
		{"zero", "http://0/", "!" + CodeURLDenied},
		{"unspecified", "http://0.0.0.0/", "!" + CodeURLDenied},
		{"IPv6 loopback", "http://[::1]/", "!" + CodeURLDenied},
		{"IPv6 loopback long", "http://[0:0:0:0:0:0:0:1]/", "!" + CodeURLDenied},
		{"IPv6 unspecified", "http://[::]/", "!" + CodeURLDenied},
		{"IPv4-mapped IPv6 self", "http://[::ffff:127.0.0.1]/", "!" + CodeURLLoop},
		{"IPv4-mapped IPv6 hex", "http://[::ffff:7f00:1]/", "!" + CodeURLLoop},
		{"link-local metadata", "http://169.254.169.254/latest", "!" + CodeURLDenied},
		{"IPv6 link-local", "http://[fe80::1]/", "!" + CodeURLDenied},
		{"IPv6 zone", "http://[fe80::1%25eth0]/", "!" + CodeInvalidURL},
		{"IPv4 out of range", "http://256.1.1.1/", "!" + CodeInvalidURL},
		{"IPv4 five parts", "http://1.2.3.4.5/", "!" + CodeInvalidURL},
		{"bad hex part", "http://0x1g.1/", "!" + CodeInvalidURL},
		{"self subdomain", "http://www.go.example/", "!" + CodeURLLoop},
		{"self trailing dot", "http://go.example./", "!" + CodeURLLoop},
		{"self trailing double dot", "http://go.example../", "!" + CodeInvalidURL},
		{"denied trailing double dot", "http://evil.example../", "!" + CodeInvalidURL},
		{"empty label", "http://a..evil.example/", "!" + CodeInvalidURL},
		{"short public IPv4 normalised", "http://8.8.2056/", "http://8.8.8.8/"},
		{"decimal public IPv4 normalised", "http://134744072/", "http://8.8.8.8/"},
		{"raw UTF-8 in the query", "https://example.com/p?q=é", "https://example.com/p?q=%C3%A9"},
		{"raw UTF-8 in the path", "https://example.com/é", "https://example.com/%C3%A9"},
		{"raw UTF-8 in the fragment", "https://example.com/#é", "https://example.com/#%C3%A9"},
	}
	p := NewURLPolicy("http://127.0.0.1:8080", []string{"sho.rt", "go.example"}, []string{"evil.example"}, false)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := p.Validate(tt.in)
			if code, ok := strings.CutPrefix(tt.want, "!"); ok {
				var he *Error
				if !errors.As(err, &he) || he.Code != code || he.Status() != 400 {
					t.Fatalf("Validate(%q) = %q, %v; want 400 %s", tt.in, got, err, code)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Validate(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

// TestValidateURLAllowLocal: with local targets allowed (a development
// setup), loopback addresses other than the shortener's own pass, and the
// shortener's own still do not.
func TestValidateURLAllowLocal(t *testing.T) {
	p := NewURLPolicy("http://127.0.0.1:8080", nil, nil, true)
	for in, want := range map[string]string{
		"http://localhost:3000/x": "http://localhost:3000/x",
		"http://127.0.0.2/":       "http://127.0.0.2/",
		"http://[::1]:9000/":      "http://[::1]:9000/",
		"http://127.1:8080/":      "!" + CodeURLLoop,
	} {
		got, err := p.Validate(in)
		if code, ok := strings.CutPrefix(want, "!"); ok {
			var he *Error
			if !errors.As(err, &he) || he.Code != code {
				t.Errorf("Validate(%q) = %q, %v; want %s", in, got, err, code)
			}
		} else if err != nil || got != want {
			t.Errorf("Validate(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestValidateAlias(t *testing.T) {
	h := mustNew(Config{}, Deps{Log: discardLogger()}) // pages off: their paths are reserved all the same
	for _, ok := range []string{"abc", "My-Link_2", strings.Repeat("a", 64), "API2", "apis", "statsx"} {
		if err := h.validateAlias(ok); err != nil {
			t.Errorf("validateAlias(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "ab", strings.Repeat("a", 65), "has space", "slash/y", "dot.ted", "é-accent",
		"api", "API", "healthz", "Readyz", "metrics", "openapi.json", "trending", "Stats", "static", "settings", "robots.txt", "export", "Import", "batch", "links"} {
		var he *Error
		if err := h.validateAlias(bad); !errors.As(err, &he) || he.Code != CodeInvalidAlias || he.Field != "alias" {
			t.Errorf("validateAlias(%q) = %v, want %s about alias", bad, err, CodeInvalidAlias)
		}
	}
}

// TestAliasCannotShadowRoute takes the routes Echo serves (pages on,
// /metrics on) and checks that no alias may be a static segment of a
// route's path: such a link could never be followed (a first segment),
// or read or edited by its code (/api/v1/links/export beside
// /api/v1/links/{code}).
func TestAliasCannotShadowRoute(t *testing.T) {
	h := mustNew(Config{Pages: true}, Deps{Metrics: http.NotFoundHandler(), Log: discardLogger()})
	for _, r := range h.e.Routes() {
		for _, seg := range strings.Split(strings.Trim(r.Path, "/"), "/") {
			if seg == "" || strings.HasPrefix(seg, ":") {
				continue
			}
			if err := h.validateAlias(seg); err == nil {
				t.Errorf("alias %q accepted; it shadows %s %s", seg, r.Method, r.Path)
			}
		}
	}
}
