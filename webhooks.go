package shortener

import (
	"errors"
	"time"
)

// Webhooks tell an API key's receivers what happened to its links. The
// store records each event in the transaction that makes the change
// (so an event is sent if and only if its change committed), one row per
// subscribed webhook; package webhook sends them, signed, until each is
// answered 2xx or is a day old. These are the types the three share.

// EventType names what happened to a link.
type EventType string

// The events a webhook may subscribe to.
const (
	EventLinkCreated EventType = "link.created" // made by a create, a batch or an import
	EventLinkUpdated EventType = "link.updated" // edited (PATCH, or a My links form)
	EventLinkDeleted EventType = "link.deleted"
	EventLinkClicked EventType = "link.clicked" // clicks counted: one event per link per shipped batch
)

// EventTypes are every event type, in the order the API documents them.
var EventTypes = []EventType{EventLinkCreated, EventLinkUpdated, EventLinkDeleted, EventLinkClicked}

// Errors about webhooks, produced by the store.
var (
	// ErrWebhookNotFound means the key has no webhook with that ID.
	ErrWebhookNotFound = errors.New("shortener: webhook not found")
	// ErrWebhookLimit means the key has as many webhooks as it may.
	ErrWebhookLimit = errors.New("shortener: too many webhooks")
)

// Webhook is one API key's subscription: where its events are sent and
// which.
type Webhook struct {
	ID        string // "wh_" and 24 hex digits, random
	Owner     string // the key's hash, as Link.Owner
	URL       string
	Events    []EventType
	Secret    string // "whsec_" and the base64 of 32 random bytes: signs every delivery
	CreatedAt time.Time
}

// Event is one thing that happened to one link.
type Event struct {
	// ID is "evt_" and 32 hex digits: the same on every attempt and for
	// every webhook, so a receiver drops the duplicates a retry may make.
	ID   string
	Type EventType
	At   time.Time // when it happened
	// Link is the link after the change (created, updated, deleted). It
	// says whether the link has a password, never what its hash is
	// (PasswordHash is a placeholder when set).
	Link Link
	// Clicks are what a clicked event counts.
	Clicks LinkClicks
}

// LinkClicks are one link's clicks counted by one shipped batch.
type LinkClicks struct {
	Code     string
	Clicks   int64
	From, To time.Time // the first and the last of those clicks
}

// Delivery is one event owed to one webhook, claimed by one sender for
// one attempt.
type Delivery struct {
	ID      int64
	Webhook string // the webhook's ID
	URL     string
	Secret  string
	Event   Event
	// Attempts counts this one: 1 on the first.
	Attempts int
	// Age is how long ago the event was recorded, by the database's
	// clock: retries stop a fixed time after it.
	Age time.Duration
	// Claim names this attempt's claim: only its holder may settle the
	// delivery, and only until the claim runs out.
	Claim string
}
