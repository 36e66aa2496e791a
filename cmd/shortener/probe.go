package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// probe is "shortener probe [-path /readyz]": it asks the server on
// $SHORTENER_ADDR (or -addr) for a route and exits 0 on a 200. Container
// images without a shell or curl (FROM scratch) use it as their
// healthcheck.
func probe(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	fs := flag.NewFlagSet("shortener probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := getenv("SHORTENER_ADDR")
	if addr == "" {
		addr = "127.0.0.1:8081"
	}
	fs.StringVar(&addr, "addr", addr, "the server's listen address ($SHORTENER_ADDR)")
	path := fs.String("path", "/readyz", "the route to ask")
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for the answer")
	if err := fs.Parse(args); err != nil {
		return err
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("probe: address %q: %w", addr, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1" // a wildcard listener answers on loopback
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+*path, nil)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("probe %s: %w", *path, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body) //nolint:errcheck // only the status matters
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("probe %s: %w: %s", *path, errNotOK, resp.Status)
	}
	return nil
}

// errNotOK is a probe's answer other than 200.
var errNotOK = errors.New("not ready")
