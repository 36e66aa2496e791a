package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"shortener/handler"
	"shortener/store"
	"shortener/webhook"
)

// WebhooksConfig is the sending of webhooks: whether this instance
// sends (every instance may at once: claims keep two from attempting
// one delivery), and the sender's webhook.Config, whose AllowPrivate
// the API's check of a webhook's URL follows too (handlerConfig).
type WebhooksConfig struct {
	On bool
	webhook.Config
}

// startWebhooks starts this instance's sender, unless sending is off
// here (events are still recorded, and other instances send them); stop
// joins it, cancelling the attempts in flight, whose deliveries are due
// again at once.
func startWebhooks(ctx context.Context, cfg Config, st *store.Store, log *slog.Logger, reg prometheus.Registerer) (stop func(), err error) {
	if !cfg.Webhooks.On {
		log.Info("webhooks are not sent from this instance (SHORTENER_WEBHOOKS=false)")
		return func() {}, nil
	}
	if cfg.Webhooks.AllowPrivate {
		log.Warn("webhooks may go to loopback and private addresses (SHORTENER_WEBHOOKS_ALLOW_PRIVATE): tests and development only")
	}
	s, err := webhook.New(cfg.Webhooks.Config, st, handler.LinkView(cfg.Handler.BaseURL), time.Now, log, reg)
	if err != nil {
		return nil, err
	}
	run := goTask(ctx, s.Run)
	return func() { run.join() }, nil //nolint:errcheck // Run returns nil when stopped
}

// webhookBook is the API's side of webhooks, over MySQL.
func webhookBook(st *store.Store) handler.Webhooks { return webhook.NewBook(st) }
