// Package nginx renders the nginx configuration that fronts the shortener
// apps, shared by the local stack and deploy.
package nginx

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"text/template"
)

//go:embed nginx.conf.tmpl
var tmplText string

var tmpl = template.Must(template.New("nginx.conf").Parse(tmplText))

// Config is what the template needs.
type Config struct {
	Listen      string   // e.g. "127.0.0.1:8080"
	Apps        []string // upstream app addresses, e.g. "127.0.0.1:8081"
	PIDFile     string
	LogDir      string
	TempDir     string
	CreateRate  int // link creations per second per client address, at least 1
	CreateBurst int // creations allowed above the rate at once, at least 1 (nginx refuses burst=0)
	// RedirectRate limits redirects per client address (a second, with
	// RedirectBurst at once); PageRate and PageBurst the previews. 0
	// leaves them unlimited. LimitExempt lists addresses or CIDRs that
	// neither limit applies to (the operator's own load generator).
	RedirectRate, RedirectBurst int
	PageRate, PageBurst         int
	LimitExempt                 []string
	// User is the user the workers run as; empty leaves nginx's default.
	// Set it only when nginx starts as root: others cannot switch user.
	User string
}

// Render writes the nginx.conf for c. Every field but User is required:
// the caller owns the values (there are no defaults here).
func Render(w io.Writer, c Config) error {
	if c.Listen == "" || len(c.Apps) == 0 || c.PIDFile == "" || c.LogDir == "" || c.TempDir == "" {
		return errors.New("nginx: Listen, Apps, PIDFile, LogDir and TempDir are required")
	}
	if c.CreateRate < 1 || c.CreateBurst < 1 {
		return fmt.Errorf("nginx: need create rate (%d) >= 1 and burst (%d) >= 1", c.CreateRate, c.CreateBurst)
	}
	if c.RedirectRate < 0 || c.PageRate < 0 || (c.RedirectRate > 0 && c.RedirectBurst < 1) || (c.PageRate > 0 && c.PageBurst < 1) {
		return fmt.Errorf("nginx: redirect and page rates must be 0 (no limit) or positive with a burst >= 1, got %d/%d and %d/%d",
			c.RedirectRate, c.RedirectBurst, c.PageRate, c.PageBurst)
	}
	for _, a := range c.LimitExempt {
		if _, err := netip.ParsePrefix(a); err != nil {
			if _, err := netip.ParseAddr(a); err != nil {
				return fmt.Errorf("nginx: limit exempt %q is neither an address nor a CIDR", a)
			}
		}
	}
	if err := tmpl.Execute(w, c); err != nil {
		return fmt.Errorf("nginx: render: %w", err)
	}
	return nil
}
