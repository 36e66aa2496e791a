// Package shortener holds the domain types every layer shares: a Link,
// the errors that describe what happened to one, and the clicks a redirect
// produces. It imports nothing of ours, so handler, cache, store and the
// click and trending packages can all speak of a link without importing
// each other.
package shortener

import (
	"errors"
	"math"
	"time"
)

// Errors about links, produced by the store and passed up unchanged by the
// cache, so the HTTP layer maps them in one place. Check them with
// errors.Is.
var (
	// ErrNotFound means no link has the code.
	ErrNotFound = errors.New("shortener: link not found")
	// ErrGone means the link expired or was deleted.
	ErrGone = errors.New("shortener: link gone")
	// ErrExhausted means the link has had its maximum visits.
	ErrExhausted = errors.New("shortener: link has had its maximum visits")
	// ErrUnavailable means the source of truth could not answer in time.
	ErrUnavailable = errors.New("shortener: database unavailable")
	// ErrCodeTaken means another link already has the code.
	ErrCodeTaken = errors.New("shortener: code already taken")
	// ErrIDTaken means another link already has the ID (not the code): a
	// node ID shared by two instances, or a clock stepped back. The
	// creator draws a new ID; it is never "alias taken".
	ErrIDTaken = errors.New("shortener: link ID already taken")
	// ErrKeyReused means an idempotency key was sent again with a
	// different request.
	ErrKeyReused = errors.New("shortener: idempotency key reused with a different request")
)

// Link is one short link.
type Link struct {
	ID        int64
	Code      string
	URL       string
	Redirect  int       // HTTP status of the redirect: 301, 302, 307 or 308
	CreatedAt time.Time // UTC, millisecond precision
	ExpiresAt time.Time // zero: never expires
	DeletedAt time.Time // zero: not deleted
	// Owner is the hash (hex SHA-256) of the API key that created the
	// link, "" for an anonymous create. Only the owner, or an admin key,
	// may delete the link, read its stats or see it in a listing.
	Owner string
	// What the owner can change later (PATCH): when it last did, whether
	// the link is off (410 until turned on), its tags (sorted, each
	// 1 to 32 of [a-z0-9_-]), the counted redirects after which it ends
	// (0: no limit) and its password's bcrypt hash ("": none).
	UpdatedAt    time.Time
	Disabled     bool
	Tags         []string
	MaxVisits    int64
	PasswordHash string
}

// LinkPatch is an edit of a link: a nil field is left as it is.
type LinkPatch struct {
	URL          *string
	Redirect     *int
	ExpiresAt    *time.Time // the zero time: never expires
	Disabled     *bool
	Tags         *[]string
	MaxVisits    *int64  // 0: no limit
	PasswordHash *string // "": no password
}

// Apply returns l with p's fields set.
func (p LinkPatch) Apply(l Link) Link {
	if p.URL != nil {
		l.URL = *p.URL
	}
	if p.Redirect != nil {
		l.Redirect = *p.Redirect
	}
	if p.ExpiresAt != nil {
		l.ExpiresAt = *p.ExpiresAt
	}
	if p.Disabled != nil {
		l.Disabled = *p.Disabled
	}
	if p.Tags != nil {
		l.Tags = *p.Tags
	}
	if p.MaxVisits != nil {
		l.MaxVisits = *p.MaxVisits
	}
	if p.PasswordHash != nil {
		l.PasswordHash = *p.PasswordHash
	}
	return l
}

// Gone reports whether the link no longer redirects at now: it expired or
// was deleted.
func (l Link) Gone(now time.Time) bool {
	return !l.DeletedAt.IsZero() || (!l.ExpiresAt.IsZero() && !now.Before(l.ExpiresAt))
}

// Idempotency identifies a create that may be retried.
type Idempotency struct {
	// Scope is who sent the key (a hash of the API key's owner identity
	// or of the client address): keys of different scopes never meet.
	Scope       string
	Key         string
	RequestHash string    // hex SHA-256 of the normalised request
	ExpiresAt   time.Time // the key may be reused for another request after this
}

// Caller is who made an API request: the owner identity of the API key
// it carried (its hash), or nobody for an anonymous request.
type Caller struct {
	Owner string // hash of the API key; "" when anonymous
	Admin bool   // an admin key may manage every link
}

// Keyed reports whether the caller sent a valid API key.
func (c Caller) Keyed() bool { return c.Owner != "" }

// Manages reports whether the caller may manage l: delete it, read its
// stats, list it. Anonymous links are managed by admin keys only.
func (c Caller) Manages(l Link) bool {
	return c.Admin || (c.Owner != "" && c.Owner == l.Owner)
}

// APIKeyHash is a stored API key as the authoriser sees it: its hash and
// whether it is an admin key.
type APIKeyHash struct {
	Hash  string
	Admin bool
}

// Invalidation is a pending cache invalidation: a link deleted or changed
// in the source of truth that caches must forget.
type Invalidation struct {
	Code      string
	CreatedAt time.Time
}

// Agent classifies the client that followed a link.
type Agent uint8

// Agent classes. A click whose User-Agent names a crawler, a monitor, a
// link-preview fetcher or a command-line tool is a bot; the rest are
// browsers.
const (
	AgentBrowser Agent = iota
	AgentBot
)

// String returns "browser" or "bot".
func (a Agent) String() string {
	if a == AgentBot {
		return "bot"
	}
	return "browser"
}

// Click is one redirect served: a GET answered 3xx. It records the link,
// the moment, the referrer's host only (never the full referrer: privacy)
// and the agent class.
type Click struct {
	LinkID   int64 // 0 when the cache that resolved the link did not know it: the code identifies it
	Code     string
	At       time.Time // UTC
	Referrer string    // host of the Referer header, lower case; "" when none
	Agent    Agent
	// Request names the proxied request the redirect answered, when the
	// proxy in front (nginx) said: a retry of one request on another
	// instance carries the same one, so the two clicks count once.
	Request ClickRequest
	// Client stands for who clicked: a hash of the client's address and
	// agent under a key random per process, so trending counts people,
	// not requests. 0 when unknown. It is never journaled or stored, and
	// means nothing outside the process that made it.
	Client uint64
	// Analyzed says Dims were derived (analytics on); a click without
	// them is counted under "unknown" in every dimension.
	Analyzed bool
	Dims     ClickDims
}

// ClickDims are a click's analytics dimensions, as package analytics
// derives and names them: the numbers here are its enumerations.
type ClickDims struct {
	Country [2]byte // ISO 3166-1 alpha-2, upper case; zeros when unknown
	Browser uint8   // analytics.Browser
	OS      uint8   // analytics.OS
	Device  uint8   // analytics.Device
	// Visitor is a keyed hash of the client's address and agent under the
	// UTC day's key (the same on every instance, deleted two days after):
	// the unique-visitor sketches count it. 0 when unknown.
	Visitor uint64
}

// ClickRequest identifies one request as the proxy in front of the
// instances received it: its random ID and when the proxy sent it on
// (Unix ms, the proxy's clock). The zero value is "not known".
type ClickRequest struct {
	ID [16]byte
	At int64
}

// Known reports whether r names a request.
func (r ClickRequest) Known() bool { return r != ClickRequest{} }

// Trend is one link's place in a trending answer: the link and its clicks
// in the answer's window.
type Trend struct {
	Link   Link
	Clicks int64
}

// Trending ranks links by their clicks in a recent window, the most
// clicked first.
type Trending struct {
	Window time.Duration
	From   time.Time // start of the counted period; it ends at AsOf
	AsOf   time.Time // when the answer was computed
	// Synced is when the counts were last read from Redis (zero: never);
	// a local answer adds what this instance counted since.
	Synced time.Time
	// Source names where the counts come from: "redis" (every instance's
	// clicks) or "local" (this instance's view while Redis is out).
	Source string
	Links  []Trend
}

// ClickBatch is a run of clicks read from one segment of an instance's
// click journal, counted in the source of truth in one transaction.
// Journal and Segment name the segment; From and To are byte positions in
// it: the batch may be counted only while the segment is recorded as
// counted through From, and leaves it counted through To. That recorded
// position is what makes a batch replayed after a crash count once: the
// replay finds the segment already counted past its From.
type ClickBatch struct {
	Journal int64 // the journal's ID: random, new each time an instance opens its journal
	Node    int64 // node ID of the instance that wrote the segment
	Segment int64 // the segment's sequence number in its journal
	From    int64 // the position the segment must be counted through
	To      int64 // the position it is counted through afterwards
	Clicks  []Click
	// CaughtUp is a time before which every click of the journal is in
	// this batch or an earlier one, as far as the shipper knows.
	CaughtUp time.Time
}

// SegmentForgotten is the position of a journal segment that was counted
// to its end and then forgotten (its file deleted, its row dropped): past
// the end of any segment, so a copy of it that comes back (a restored
// backup) counts nothing.
const SegmentForgotten int64 = math.MaxInt64

// ClickCount is the clicks of one bucket of a series: an hour or a day
// starting at Start (UTC).
type ClickCount struct {
	Start  time.Time
	Clicks int64
	// Visitors estimates the bucket's unique visitors (a HyperLogLog).
	Visitors int64
}

// The analytics dimensions, as ClickStats.Dims and DimCount name them.
const (
	DimCountry = "country"
	DimBrowser = "browser"
	DimOS      = "os"
	DimDevice  = "device"
)

// Dimensions lists them in the order the stats show them.
var Dimensions = []string{DimCountry, DimBrowser, DimOS, DimDevice}

// DimCount is one UTC day's clicks with one value of an analytics
// dimension ("country", "US").
type DimCount struct {
	Day    time.Time
	Dim    string
	Value  string
	Clicks int64
}

// ReferrerCount is the clicks that came from one referrer host ("" for
// none).
type ReferrerCount struct {
	Host   string
	Clicks int64
}

// ClickStats are a link's clicks over a time range, as counted in the
// source of truth.
type ClickStats struct {
	Total     int64
	Series    []ClickCount    // every bucket of the range, zeros included
	Referrers []ReferrerCount // most clicks first
	Browsers  int64
	Bots      int64
	// Visitors estimates the range's unique visitors: a visitor is
	// counted once per UTC day (its key changes daily), so over several
	// days it is the sum of each day's uniques, not people.
	Visitors int64
	// Dims counts the range's clicks (by whole UTC days) by each analytics
	// dimension's values: "country" → "US" → n, and "browser", "os",
	// "device". Each dimension's values sum to the clicks of those days.
	Dims map[string]map[string]int64
	// DayDims are the same counts day by day (for the CSV export), by
	// day, dimension and value.
	DayDims []DimCount
	// AsOf is how far the counts are complete: every click journaled
	// before it, on every instance shipping recently, is counted.
	AsOf time.Time
}
