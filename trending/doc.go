// Package trending ranks links by their clicks in a recent window (5
// minutes, 1 hour, 24 hours) across every instance, and keeps answering
// while Redis is down.
package trending
