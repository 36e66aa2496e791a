package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Deliveries are signed as the Standard Webhooks specification says
// (www.standardwebhooks.com, v1), so that a receiver can check them with
// any of its libraries: the secret is "whsec_" and the base64 of the key;
// the headers are webhook-id (the event's ID), webhook-timestamp (the
// attempt's time, Unix seconds: a receiver refuses an old one, which
// stops replays) and webhook-signature, "v1," and the base64 of
// HMAC-SHA256(key, id + "." + timestamp + "." + body). Signing the ID
// too means a captured delivery cannot be resent as another event.

// Header names of a delivery.
const (
	HeaderID        = "Webhook-Id"
	HeaderTimestamp = "Webhook-Timestamp"
	HeaderSignature = "Webhook-Signature"
)

// secretPrefix begins every secret.
const secretPrefix = "whsec_"

// secretBytes is a secret's key length: the HMAC's block size is 64,
// its output 32, and the specification asks for 24 to 64.
const secretBytes = 32

// NewSecret returns a new random secret.
func NewSecret() string {
	b := make([]byte, secretBytes)
	rand.Read(b) //nolint:errcheck // never fails (crypto/rand)
	return secretPrefix + base64.StdEncoding.EncodeToString(b)
}

// errSecret means a secret is not "whsec_" and base64.
var errSecret = errors.New("webhook: malformed secret")

// Sign returns the webhook-signature header of body, sent as event id at
// timestamp (Unix seconds, as the header carries it) under secret.
func Sign(secret, id, timestamp string, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
	if err != nil || len(key) == 0 {
		return "", fmt.Errorf("sign event %s: %w", id, errSecret)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)), nil
}
