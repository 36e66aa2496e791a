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

// ValidateURL checks that raw is an absolute http or https URL with a host
// and returns it in the form to store: the host lower-cased and in ASCII.
// Errors are *Error values with code invalid_url.
func ValidateURL(raw string) (string, error) {
	bad := func(format string, args ...any) (string, error) {
		return "", &Error{Status: 400, Code: CodeInvalidURL, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case raw == "":
		return bad("url is required")
	case len(raw) > MaxURLLen:
		return bad("url is %d bytes; the limit is %d", len(raw), MaxURLLen)
	case !utf8.ValidString(raw):
		return bad("url is not valid UTF-8")
	}
	for _, r := range raw {
		// Spaces and control characters have no place in a URL; a
		// browser would strip or encode them differently than we do.
		if r <= ' ' || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return bad("url contains whitespace or a control character")
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("url does not parse: %v", unwrapURLError(err))
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		if u.Scheme == "" {
			return bad("url must be absolute (start with http:// or https://)")
		}
		return bad("url scheme %q is not allowed; use http or https", u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" {
		return bad("url must have a host")
	}
	host := u.Hostname()
	if host == "" {
		return bad("url must have a host")
	}
	if port := u.Port(); port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return bad("url port %q is out of range 1-65535", port)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return bad("url has an empty port")
	}
	if !strings.HasPrefix(u.Host, "[") { // IP literals stay as they are
		ascii, err := idnaProfile.ToASCII(host)
		if err != nil {
			return bad("url host %q is not a valid domain name: %v", host, err)
		}
		if p := u.Port(); p != "" {
			u.Host = ascii + ":" + p
		} else {
			u.Host = ascii
		}
	}
	u.Scheme = scheme
	out := u.String()
	if len(out) > MaxURLLen {
		return bad("url is %d bytes once normalised; the limit is %d", len(out), MaxURLLen)
	}
	return out, nil
}

// unwrapURLError drops url.Error's quoting of the whole input, which would
// repeat a possibly long URL in the message.
func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}
