package handler

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// MaxURLLen is the longest target URL accepted, in bytes. Browsers and
// proxies handle 2,048 everywhere; longer URLs are usually abuse.
const MaxURLLen = 2048

// idnaProfile converts internationalised host names to their ASCII
// (punycode) form and rejects names that are not valid IDNA, so the
// Location header we send is always plain ASCII.
var idnaProfile = idna.New(idna.MapForLookup(), idna.BidiRule(), idna.Transitional(false))

// URLPolicy decides which target URLs a link may point to.
type URLPolicy struct {
	// SelfHosts are the shortener's own host names: a link to one of them
	// would redirect to the shortener itself (a loop, or a chain that hides
	// the real target).
	SelfHosts []string
	// DenyHosts are refused, with every subdomain.
	DenyHosts []string
}

// Validate checks raw and returns it in the form to store: scheme and host
// lower-cased, the host in ASCII. Every rejection is an *Error with its own
// code, so a client can tell what to fix.
func (p URLPolicy) Validate(raw string) (string, error) {
	bad := func(code, format string, args ...any) (string, error) {
		return "", &Error{Status: 400, Code: code, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case raw == "":
		return bad(CodeInvalidURL, "url is required")
	case len(raw) > MaxURLLen:
		return bad(CodeURLTooLong, "url is %d bytes; the limit is %d", len(raw), MaxURLLen)
	case !utf8.ValidString(raw):
		return bad(CodeInvalidURL, "url is not valid UTF-8")
	}
	for _, r := range raw {
		// Spaces and control characters have no place in a URL; a
		// browser would strip or encode them differently than we do.
		if r <= ' ' || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return bad(CodeURLControlChars, "url contains whitespace or a control character")
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad(CodeInvalidURL, "url does not parse: %v", unwrapURLError(err))
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case u.Scheme == "":
		return bad(CodeInvalidURL, "url must be absolute (start with http:// or https://)")
	case scheme != "http" && scheme != "https":
		return bad(CodeURLScheme, "url scheme %q is not allowed; use http or https", u.Scheme)
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return bad(CodeInvalidURL, "url must have a host")
	case u.User != nil:
		// https://bank.example@evil.example/ reads as bank.example to a
		// hurried eye: a phishing trick, never needed in a short link.
		return bad(CodeURLCredentials, "url must not contain a user name or password")
	}
	host := u.Hostname()
	if port := u.Port(); port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return bad(CodeInvalidURL, "url port %q is out of range 1-65535", port)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return bad(CodeInvalidURL, "url has an empty port")
	}
	if !strings.HasPrefix(u.Host, "[") { // IP literals stay as they are
		ascii, err := idnaProfile.ToASCII(host)
		if err != nil {
			return bad(CodeInvalidURL, "url host %q is not a valid domain name: %v", host, err)
		}
		host = ascii
		if p := u.Port(); p != "" {
			u.Host = ascii + ":" + p
		} else {
			u.Host = ascii
		}
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, h := range p.SelfHosts {
		if host == h {
			return bad(CodeURLLoop, "url points back at this shortener (%s)", h)
		}
	}
	for _, h := range p.DenyHosts {
		if host == h || strings.HasSuffix(host, "."+h) {
			return bad(CodeURLDenied, "links to %s are not allowed", h)
		}
	}
	u.Scheme = scheme
	out := u.String()
	if len(out) > MaxURLLen {
		return bad(CodeURLTooLong, "url is %d bytes once normalised; the limit is %d", len(out), MaxURLLen)
	}
	return out, nil
}

// NewURLPolicy builds a policy whose self hosts are baseURL's host plus
// extra, and normalises every host name the way Validate does.
func NewURLPolicy(baseURL string, extraSelf, deny []string) URLPolicy {
	norm := func(hosts []string) (out []string) {
		for _, h := range hosts {
			h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
			if a, err := idnaProfile.ToASCII(h); err == nil {
				h = a
			}
			if h != "" {
				out = append(out, h)
			}
		}
		return out
	}
	self := extraSelf
	if u, err := url.Parse(baseURL); err == nil && u.Hostname() != "" {
		self = append([]string{u.Hostname()}, self...)
	}
	return URLPolicy{SelfHosts: norm(self), DenyHosts: norm(deny)}
}

// unwrapURLError drops url.Error's quoting of the whole input, which would
// repeat a possibly long URL in the message.
func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}
