package handler

import (
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
	// SelfHosts are the shortener's own hosts, names (with their
	// subdomains) or addresses: a link to one of them would redirect to
	// the shortener itself (a loop, or a chain that hides the real
	// target).
	SelfHosts []hostForm
	// DenyHosts are refused, names with every subdomain.
	DenyHosts []hostForm
	// AllowLocal lets links point at loopback, unspecified and
	// link-local addresses and at localhost names, refused by default:
	// such a link points into the machine or network that follows it.
	AllowLocal bool
}

// Validate checks raw and returns it in the form to store: scheme and host
// lower-cased, the host in ASCII. Every rejection is an *Error with its own
// code, so a client can tell what to fix.
func (p URLPolicy) Validate(raw string) (string, error) {
	bad := func(code, format string, args ...any) (string, error) {
		return "", fieldErrorf(code, "url", format, args...)
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
	// One trailing dot is the same host (the DNS root); an empty label
	// anywhere else ("example.com..", "a..b") is no host at all, and must
	// not slip past the self and deny lists.
	if strings.HasPrefix(host, ".") || strings.Contains(host, "..") {
		return bad(CodeInvalidURL, "url host %q has an empty label", host)
	}
	if !strings.Contains(host, ":") {
		// Names are mapped first, as browsers do: full-width digits and
		// dots become ASCII, and may spell an address.
		ascii, err := idnaProfile.ToASCII(host)
		if err != nil {
			return bad(CodeInvalidURL, "url host %q is not a valid domain name: %v", host, err)
		}
		host = ascii
	}
	var form hostForm
	if addr, isIP, ok := parseHostIP(host); isIP {
		if !ok {
			return bad(CodeInvalidURL, "url host %q is not a valid address", host)
		}
		// Stored in its one canonical spelling, as browsers would use it.
		form.addr, host = addr, addr.String()
		if addr.Is6() {
			host = "[" + host + "]"
		}
	} else {
		form.name = strings.TrimSuffix(strings.ToLower(host), ".")
	}
	if p := u.Port(); p != "" {
		u.Host = host + ":" + p
	} else {
		u.Host = host
	}
	for _, h := range p.SelfHosts {
		if h.matches(form, true) {
			return bad(CodeURLLoop, "url points back at this shortener")
		}
	}
	if !p.AllowLocal && (form.addr.IsValid() && localAddr(form.addr) || localName(form.name)) {
		return bad(CodeURLDenied, "links to loopback, unspecified or link-local addresses are not allowed")
	}
	for _, h := range p.DenyHosts {
		if h.matches(form, true) {
			return bad(CodeURLDenied, "links to this host are not allowed")
		}
	}
	u.Scheme = scheme
	// The query is kept as the client sent it, but Location must be ASCII:
	// raw bytes past 0x7f are percent-encoded (the path and fragment are
	// by url.URL itself).
	u.RawQuery = escapeNonASCII(u.RawQuery)
	out := u.String()
	if len(out) > MaxURLLen {
		return bad(CodeURLTooLong, "url is %d bytes once normalised; the limit is %d", len(out), MaxURLLen)
	}
	for i := 0; i < len(out); i++ {
		if out[i] >= 0x80 {
			return bad(CodeInvalidURL, "url cannot be written in ASCII")
		}
	}
	return out, nil
}

// escapeNonASCII percent-encodes every byte of s past 0x7f.
func escapeNonASCII(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 {
			if b.Len() == 0 {
				b.WriteString(s[:i])
			}
			b.WriteString("%" + strings.ToUpper(strconv.FormatUint(uint64(c), 16)))
		} else if b.Len() > 0 {
			b.WriteByte(c)
		}
	}
	if b.Len() == 0 {
		return s
	}
	return b.String()
}

// NewURLPolicy builds a policy whose self hosts are baseURL's host plus
// extra, and normalises every host the way Validate does. allowLocal
// admits loopback, unspecified and link-local targets.
func NewURLPolicy(baseURL string, extraSelf, deny []string, allowLocal bool) URLPolicy {
	norm := func(hosts []string) (out []hostForm) {
		for _, h := range hosts {
			if f, ok := normHost(h); ok {
				out = append(out, f)
			}
		}
		return out
	}
	self := extraSelf
	if u, err := url.Parse(baseURL); err == nil && u.Hostname() != "" {
		self = append([]string{u.Hostname()}, self...)
	}
	return URLPolicy{SelfHosts: norm(self), DenyHosts: norm(deny), AllowLocal: allowLocal}
}

// unwrapURLError drops url.Error's quoting of the whole input, which would
// repeat a possibly long URL in the message.
func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}
