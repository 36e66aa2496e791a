package webhook

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"shortener"
)

// userAgent names the sender to receivers.
const userAgent = "shortener-webhooks/1"

// maxAnswer is how much of an answer's body is read (and dropped), so
// that its connection can be reused; past it the connection is closed.
const maxAnswer = 64 << 10

// send makes one attempt of d: nil when the receiver answered 2xx.
func (s *Sender) send(ctx context.Context, d shortener.Delivery) error {
	body, err := encode(d.Event, s.view)
	if err != nil {
		return err
	}
	ts := strconv.FormatInt(s.now().Unix(), 10)
	sig, err := Sign(d.Secret, d.Event.ID, ts, body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("deliver event %s: %w", d.Event.ID, err)
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", userAgent)
	h.Set(HeaderID, d.Event.ID)
	h.Set(HeaderTimestamp, ts)
	h.Set(HeaderSignature, sig)
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("deliver event %s: %w", d.Event.ID, err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer)) //nolint:errcheck // the answer's body means nothing
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("deliver event %s: %w", d.Event.ID, statusError(resp.StatusCode))
	}
	return nil
}
