package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"shortener/internal/poll"
)

// TestAPIKeysCommand creates a key with the command, uses it, revokes it,
// and sees it refused; only the key's hash is stored.
func TestAPIKeysCommand(t *testing.T) {
	s := newServers(t)
	env := func(k string) string {
		if k == "SHORTENER_MYSQL_DSN" {
			return s.MySQLDSN()
		}
		return ""
	}
	ctx := context.Background()
	var out bytes.Buffer
	if err := run(ctx, []string{"keys", "create", "ci"}, env, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(out.String())
	if !strings.HasPrefix(key, "sk_") || len(key) < 40 {
		t.Fatalf("keys create printed %q, want a key", key)
	}
	if err := run(ctx, []string{"keys", "create", "ci"}, env, io.Discard, io.Discard); err == nil {
		t.Error("a second key with the same name was created")
	}

	a := startApp(t, s, 1, "SHORTENER_ANONYMOUS_CREATE", "false")
	post := func(key string) int {
		req, _ := http.NewRequest(http.MethodPost, a.base+"/api/v1/links", strings.NewReader(`{"url":"https://example.com/k"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Api-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post(""); got != http.StatusUnauthorized {
		t.Errorf("anonymous create with the switch off: %d, want 401", got)
	}
	if got := post(key); got != http.StatusCreated {
		t.Errorf("create with the new key: %d, want 201", got)
	}
	out.Reset()
	if err := run(ctx, []string{"keys", "list"}, env, &out, io.Discard); err != nil || !strings.Contains(out.String(), "ci\t") || strings.Contains(out.String(), key) {
		t.Errorf("keys list = %q, %v; want the name and never the key", out.String(), err)
	}
	if err := run(ctx, []string{"keys", "revoke", "ci"}, env, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the revoked key refused", func() error {
		if got := post(key); got != http.StatusUnauthorized {
			return fmt.Errorf("a create with it answered %d", got)
		}
		return nil
	})
}
