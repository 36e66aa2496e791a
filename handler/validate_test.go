package handler

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateURL(t *testing.T) {
	long := "https://example.com/" + strings.Repeat("a", MaxURLLen-len("https://example.com/"))
	tests := []struct {
		name string
		in   string
		want string // "" means rejected
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

		{"empty", "", ""},
		{"javascript", "javascript:alert(1)", ""},
		{"javascript upper", "JaVaScRiPt:alert(1)", ""},
		{"data", "data:text/html,<script>alert(1)</script>", ""},
		{"ftp", "ftp://example.com/f", ""},
		{"mailto", "mailto:a@example.com", ""},
		{"relative path", "/local/path", ""},
		{"relative no slash", "example.com/x", ""},
		{"scheme-relative", "//example.com/x", ""},
		{"no host", "https:///path", ""},
		{"opaque", "https:example.com", ""},
		{"leading space", " https://example.com", ""},
		{"trailing newline", "https://example.com\n", ""},
		{"inner space", "https://example.com/a b", ""},
		{"tab", "https://exa\tmple.com", ""},
		{"NUL", "https://example.com/\x00", ""},
		{"C1 control", "https://example.com/\u0085", ""},
		{"over-long", long + "a", ""},
		{"non-UTF-8", "https://example.com/\xff\xfe", ""},
		{"port zero", "https://example.com:0/", ""},
		{"port too big", "https://example.com:65536/", ""},
		{"port not a number", "https://example.com:http/", ""},
		{"empty port", "https://example.com:/", ""},
		{"invalid IDN", "https://xn--a.example/", ""},
		{"bad percent escape", "https://example.com/%zz", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ValidateURL(tt.in)
			if tt.want == "" {
				var he *Error
				if !errors.As(err, &he) || he.Code != CodeInvalidURL || he.Status != 400 {
					t.Fatalf("ValidateURL(%q) = %q, %v; want 400 %s", tt.in, got, err, CodeInvalidURL)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ValidateURL(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}
