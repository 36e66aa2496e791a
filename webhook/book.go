package webhook

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"shortener"
)

// Registry keeps the webhooks themselves (store.Store).
type Registry interface {
	// CreateWebhook stores w unless its owner has limit already
	// (shortener.ErrWebhookLimit).
	CreateWebhook(ctx context.Context, w shortener.Webhook, limit int) error
	// Webhooks returns owner's webhooks, secrets included.
	Webhooks(ctx context.Context, owner string) ([]shortener.Webhook, error)
	// DeleteWebhook deletes owner's webhook id and what is owed to it
	// (shortener.ErrWebhookNotFound if owner has none with id).
	DeleteWebhook(ctx context.Context, owner, id string) error
}

// PerKey is how many webhooks one API key may have: each event of its
// links is sent to each, so the bound keeps a change's cost bounded.
const PerKey = 10

// Book is the API's side of webhooks (handler.Webhooks): it makes each
// webhook's ID and secret, here beside the signing that reads the
// secret, and keeps it in the registry.
type Book struct{ reg Registry }

// NewBook returns a Book over reg.
func NewBook(reg Registry) *Book { return &Book{reg: reg} }

// Add makes owner a webhook that sends events to url, which the caller
// has checked (and Targets checks again on every delivery).
func (b *Book) Add(ctx context.Context, owner, url string, events []shortener.EventType, now time.Time) (shortener.Webhook, error) {
	var id [12]byte
	rand.Read(id[:]) //nolint:errcheck // never fails (crypto/rand)
	w := shortener.Webhook{ID: "wh_" + hex.EncodeToString(id[:]), Owner: owner, URL: url, Events: events,
		Secret: NewSecret(), CreatedAt: now.UTC().Truncate(time.Millisecond)}
	if err := b.reg.CreateWebhook(ctx, w, PerKey); err != nil {
		return shortener.Webhook{}, fmt.Errorf("add webhook: %w", err)
	}
	return w, nil
}

// List returns owner's webhooks, oldest first.
func (b *Book) List(ctx context.Context, owner string) ([]shortener.Webhook, error) {
	return b.reg.Webhooks(ctx, owner)
}

// Remove deletes owner's webhook id: nothing more is sent to it.
func (b *Book) Remove(ctx context.Context, owner, id string) error {
	return b.reg.DeleteWebhook(ctx, owner, id)
}
