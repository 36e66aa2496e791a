package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"shortener/internal/topology"
	"shortener/tools/apiclient"
)

// TestGeneratedClient drives the running stack, through nginx, with the Go
// client oapi-codegen generates from handler/openapi.json: what a real
// client of the document would do. It creates a link with the stack's key,
// shows it, finds it in the key's listing, reads its stats, deletes it,
// and sees it gone; without the key, showing it is 401.
func TestGeneratedClient(t *testing.T) {
	s := startFullStack(t)
	b, err := os.ReadFile(filepath.Join(s.Dir(), topology.APIKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(b))
	withKey := apiclient.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("X-Api-Key", key)
		return nil
	})
	c, err := apiclient.NewClientWithResponses(s.BaseURL(), withKey)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	idem := "smoke-1"
	created, err := c.CreateLinkWithResponse(ctx, &apiclient.CreateLinkParams{IdempotencyKey: &idem},
		apiclient.CreateLinkJSONRequestBody{Url: "https://example.com/smoke"})
	if err != nil || created.JSON201 == nil {
		t.Fatalf("create: %v, %d %s", err, created.StatusCode(), created.Body)
	}
	code := created.JSON201.Code

	shown, err := c.ShowLinkWithResponse(ctx, code)
	if err != nil || shown.JSON200 == nil || shown.JSON200.Url != "https://example.com/smoke" {
		t.Fatalf("show: %v, %d %s", err, shown.StatusCode(), shown.Body)
	}
	listed, err := c.ListLinksWithResponse(ctx, &apiclient.ListLinksParams{})
	if err != nil || listed.JSON200 == nil || len(listed.JSON200.Links) == 0 || listed.JSON200.Links[0].Code != code {
		t.Fatalf("list: %v, %d %s; want %s first", err, listed.StatusCode(), listed.Body, code)
	}
	stats, err := c.LinkStatsWithResponse(ctx, code, &apiclient.LinkStatsParams{})
	if err != nil || stats.StatusCode() != http.StatusOK {
		t.Fatalf("stats: %v, %d %s", err, stats.StatusCode(), stats.Body)
	}

	anon, err := apiclient.NewClientWithResponses(s.BaseURL())
	if err != nil {
		t.Fatal(err)
	}
	if r, err := anon.ShowLinkWithResponse(ctx, code); err != nil || r.JSON401 == nil {
		t.Errorf("show without the key: %v, %d %s; want 401", err, r.StatusCode(), r.Body)
	}

	deleted, err := c.DeleteLinkWithResponse(ctx, code)
	if err != nil || deleted.StatusCode() != http.StatusNoContent {
		t.Fatalf("delete: %v, %d %s", err, deleted.StatusCode(), deleted.Body)
	}
	if r, err := c.ShowLinkWithResponse(ctx, code); err != nil || r.JSON410 == nil {
		t.Errorf("show after delete: %v, %d %s; want 410", err, r.StatusCode(), r.Body)
	}
	if r, err := c.DeleteLinkWithResponse(ctx, code); err != nil || r.JSON410 == nil {
		t.Errorf("delete again: %v, %d %s; want 410", err, r.StatusCode(), r.Body)
	}
	// The operational endpoints are not served by the public server.
	for _, path := range []string{"/metrics", "/readyz"} {
		resp, err := http.Get(s.BaseURL() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s through nginx: %d, want 404", path, resp.StatusCode)
		}
	}
}
