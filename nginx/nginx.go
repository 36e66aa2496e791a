// Package nginx renders the nginx configuration that fronts the shortener
// apps, shared by the local stack and deploy.
package nginx

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
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
	if err := tmpl.Execute(w, c); err != nil {
		return fmt.Errorf("nginx: render: %w", err)
	}
	return nil
}
