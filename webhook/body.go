package webhook

import (
	"encoding/json"
	"fmt"
	"time"

	"shortener"
)

// LinkView is how the API shows a link (handler.LinkView): an event's
// data is the same, so a receiver reads a link as a client does.
type LinkView func(shortener.Link) any

// body is a delivery's JSON: the Standard Webhooks payload (type,
// timestamp, data), with the event's ID too, which webhook-id carries.
type body struct {
	ID        string              `json:"id"`
	Type      shortener.EventType `json:"type"`
	Timestamp time.Time           `json:"timestamp"`
	Data      any                 `json:"data"`
}

// clicked is a link.clicked event's data.
type clicked struct {
	Code   string `json:"code"`
	Clicks int64  `json:"clicks"`
	Period period `json:"period"`
}

// period is when the clicks an event counts happened: the first and the
// last.
type period struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// encode returns e's body, the same on every attempt.
func encode(e shortener.Event, view LinkView) ([]byte, error) {
	b := body{ID: e.ID, Type: e.Type, Timestamp: e.At.UTC()}
	switch e.Type {
	case shortener.EventLinkCreated, shortener.EventLinkUpdated, shortener.EventLinkDeleted:
		b.Data = view(e.Link)
	case shortener.EventLinkClicked:
		c := e.Clicks
		b.Data = clicked{Code: c.Code, Clicks: c.Clicks, Period: period{From: c.From.UTC(), To: c.To.UTC()}}
	default:
		return nil, fmt.Errorf("encode event %s: unknown type %q", e.ID, e.Type)
	}
	return json.Marshal(b)
}
