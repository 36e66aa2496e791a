package handler

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"
	"shortener"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// Webhooks are an API key's subscriptions to the events of its links
// (package webhook sends them; docs/api.md, Webhooks).
type Webhooks interface {
	// Add makes owner a webhook sending events to url, with a new ID
	// and secret: shortener.ErrWebhookLimit if owner has all it may.
	Add(ctx context.Context, owner, url string, events []shortener.EventType, now time.Time) (shortener.Webhook, error)
	// List returns owner's webhooks, oldest first.
	List(ctx context.Context, owner string) ([]shortener.Webhook, error)
	// Remove deletes owner's webhook id, and what is still owed to it:
	// shortener.ErrWebhookNotFound if owner has none with id.
	Remove(ctx context.Context, owner, id string) error
}

// webhookRequest is the body of POST /api/v1/webhooks.
type webhookRequest struct {
	URL    string   `json:"url"`
	Events []string `json:"events"` // absent or null: every event
}

// webhookResponse is how a webhook is shown: its secret only in the
// answer that made it.
type webhookResponse struct {
	ID        string                `json:"id"`
	URL       string                `json:"url"`
	Events    []shortener.EventType `json:"events"`
	Secret    string                `json:"secret,omitempty"`
	CreatedAt time.Time             `json:"created_at"`
}

var errNoWebhooks = &Error{Code: CodeNotFound, Message: "webhooks are not available"}

// createWebhook answers POST /api/v1/webhooks: 201 with the webhook and
// its secret, which no later answer shows.
func (h *Handler) createWebhook(c echo.Context) error {
	if h.d.Webhooks == nil {
		return errNoWebhooks
	}
	var req webhookRequest
	if err := h.decodeJSON(c, &req); err != nil {
		return err
	}
	u, err := h.webhookURL(req.URL)
	if err != nil {
		return err
	}
	events, err := webhookEvents(req.Events)
	if err != nil {
		return err
	}
	w, err := h.d.Webhooks.Add(c.Request().Context(), callerOf(c).Owner, u, events, h.d.Now())
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/v1/webhooks/"+w.ID)
	out := webhookView(w)
	out.Secret = w.Secret
	return c.JSON(http.StatusCreated, out)
}

// listWebhooks answers GET /api/v1/webhooks: the key's webhooks, oldest
// first, without their secrets. An admin key sees its own, as with links.
func (h *Handler) listWebhooks(c echo.Context) error {
	if h.d.Webhooks == nil {
		return errNoWebhooks
	}
	ws, err := h.d.Webhooks.List(c.Request().Context(), callerOf(c).Owner)
	if err != nil {
		return err
	}
	out := make([]webhookResponse, len(ws))
	for i, w := range ws {
		out[i] = webhookView(w)
	}
	return c.JSON(http.StatusOK, map[string][]webhookResponse{"webhooks": out})
}

// deleteWebhook answers DELETE /api/v1/webhooks/{id}: 204 once the
// webhook and what it is owed are deleted; another key's is 404, as an
// unknown one.
func (h *Handler) deleteWebhook(c echo.Context) error {
	if h.d.Webhooks == nil {
		return errNoWebhooks
	}
	if err := h.d.Webhooks.Remove(c.Request().Context(), callerOf(c).Owner, c.Param("id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func webhookView(w shortener.Webhook) webhookResponse {
	return webhookResponse{ID: w.ID, URL: w.URL, Events: w.Events, CreatedAt: w.CreatedAt.UTC()}
}

// webhookURL checks a webhook's URL by the links' rules (scheme, length,
// characters, credentials, the deny list), but for two: it may point at
// the shortener's own host (a webhook is no redirect, so no loop), and
// whether it may point at a loopback, private or link-local address is
// Config.WebhookTargets' to say (webhook.Targets, which checks every
// delivery's address again once resolved). It returns the URL to store.
func (h *Handler) webhookURL(raw string) (string, error) {
	p := h.policy
	p.SelfHosts, p.AllowLocal = nil, true // judged below instead
	u, err := p.Validate(raw)
	if err != nil {
		return "", err
	}
	allows := h.cfg.WebhookTargets
	if allows == nil {
		allows = func(a netip.Addr) bool { return !localAddr(a) }
	}
	pu, err := url.Parse(u)
	if err != nil { // Validate's own output: never
		return "", fieldErrorf(CodeInvalidURL, "url", "url does not parse")
	}
	host := strings.TrimSuffix(pu.Hostname(), ".") // lower case already
	addr, isIP, _ := parseHostIP(host)             // canonical already: an address parses
	if !isIP && localName(host) {
		addr, isIP = netip.IPv6Loopback(), true
	}
	if isIP && !allows(addr) {
		return "", fieldErrorf(CodeURLDenied, "url", "webhooks are not sent to loopback, private or link-local addresses")
	}
	return u, nil
}

// webhookEvents reads a webhook's event types: every one if none are
// named, else those named, each once, in the documented order.
func webhookEvents(names []string) ([]shortener.EventType, error) {
	if names == nil {
		return slices.Clone(shortener.EventTypes), nil
	}
	if len(names) == 0 {
		return nil, fieldErrorf(CodeInvalidRequest, "events", "events must name at least one event, or be left out for all of them")
	}
	var out []shortener.EventType
	for _, n := range names {
		if !slices.Contains(shortener.EventTypes, shortener.EventType(n)) {
			return nil, fieldErrorf(CodeInvalidRequest, "events", "event %q is not one of link.created, link.updated, link.deleted, link.clicked", n)
		}
	}
	for _, e := range shortener.EventTypes {
		if slices.Contains(names, string(e)) {
			out = append(out, e)
		}
	}
	return out, nil
}

// LinkView returns how the API shows a link under baseURL, for a
// webhook's events (webhook.LinkView): the same JSON as
// GET /api/v1/links/{code} answers.
func LinkView(baseURL string) func(shortener.Link) any {
	h := &Handler{cfg: Config{BaseURL: baseURL}} // response reads the base URL alone
	return func(l shortener.Link) any { return h.response(l) }
}
