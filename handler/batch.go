package handler

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"shortener"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/maypok86/otter/v2"
	"golang.org/x/time/rate"
)

// BatchKeys records the Idempotency-Key of a batch of creates.
type BatchKeys interface {
	// ClaimBatchKey records idem for a batch: replay false the first time
	// (or once the key expired), true for a retry with the same request
	// hash, and shortener.ErrKeyReused for another request under a live
	// key.
	ClaimBatchKey(ctx context.Context, idem shortener.Idempotency, now time.Time) (replay bool, err error)
}

// Batch bounds. A batch's body is at most 1,000 links of at most 2 KiB
// of URL each, and a password costs about 70 ms of one core to hash
// (password.go): 100 of them keep a batch's hashing to seconds.
const (
	maxBatch          = 1000
	maxBatchPasswords = 100
	maxBatchBody      = 4 << 20
)

// batchRequest is the body of POST /api/v1/links/batch. Its links are
// decoded one by one (a bad link is that link's answer, not the batch's).
type batchRequest struct {
	Links json.RawMessage `json:"links"`
}

// batchResult is one link's answer in a batch, in the batch's order: 201
// and the link, or the status and error a create would have answered.
type batchResult struct {
	Status int           `json:"status"`
	Link   *linkResponse `json:"link,omitempty"`
	Error  *errorDetail  `json:"error,omitempty"`
}

// errorDetail is an error inside a 200 answer (a batch's link, an
// import's row), in the form of errorBody's.
type errorDetail struct {
	Code    string `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

func detailOf(e Error) errorDetail {
	return errorDetail{Code: e.Code, Field: e.Field, Message: e.Message}
}

// batchCreate returns the handler of POST /api/v1/links/batch, with its
// own per-instance bucket for the create limit (the shared one, in
// Redis, is the single creates' own: a key's budget over all instances
// is one).
func (h *Handler) batchCreate() echo.HandlerFunc {
	local := newLocalLimiter(maxLocalBuckets)
	return func(c echo.Context) error { return h.batch(c, local) }
}

// batch creates up to 1,000 links, each exactly as POST /api/v1/links
// would (createLink), and answers 200 with a result per link in order.
// The create limit counts links: a batch of 50 takes 50 at once, or is
// refused whole. One Idempotency-Key covers the batch: each link is made
// under a key of its own derived from it and its place, so a retry with
// the same key and body replays every link made and makes the rest; the
// same key with another body is 422 before anything is made.
func (h *Handler) batch(c echo.Context, local *localLimiter) error {
	items, err := h.decodeBatch(c)
	if err != nil {
		return err
	}
	reqs := make([]createRequest, len(items))
	bad := make([]error, len(items))
	passwords := 0
	for i, raw := range items {
		if bad[i] = decodeObject(raw, &reqs[i]); bad[i] == nil && reqs[i].Password != "" {
			passwords++
		}
	}
	if passwords > maxBatchPasswords {
		return fieldErrorf(CodeInvalidRequest, "links", "a batch may set at most %d passwords (each costs ~70 ms to hash), got %d", maxBatchPasswords, passwords)
	}
	key, err := idempotencyKey(c.Request().Header)
	if err != nil {
		return err
	}
	if err := h.takeCreates(c, local, len(items)); err != nil {
		return err
	}
	// Up to 1,000 creates (and 100 hashes) may outlast the server's
	// write timeout, which is for one small request.
	_ = http.NewResponseController(c.Response()).SetWriteDeadline(time.Now().Add(streamDeadline))
	ctx := c.Request().Context()
	caller := callerOf(c)
	scope := keyScope(caller, c.RealIP())
	var itemKey func(i int) string
	if key != "" {
		if h.d.BatchKeys == nil {
			return &Error{Code: CodeInvalidRequest, Message: "this server takes no Idempotency-Key on batches"}
		}
		// Client keys hold no space (idempotencyKey), so these never
		// meet a key a single create was sent with.
		sum := sha256.Sum256([]byte(key))
		prefix := "batch " + hex.EncodeToString(sum[:])
		now := h.d.Now().UTC().Truncate(time.Millisecond)
		replay, err := h.d.BatchKeys.ClaimBatchKey(ctx, shortener.Idempotency{
			Scope: scope, Key: prefix, RequestHash: h.batchHash(items), ExpiresAt: now.Add(h.cfg.IdempotencyTTL)}, now)
		if err != nil {
			return err
		}
		if replay {
			c.Response().Header().Set("Idempotent-Replayed", "true")
		}
		itemKey = func(i int) string { return prefix + " " + strconv.Itoa(i) }
	}
	out := struct {
		Results []batchResult `json:"results"`
	}{Results: make([]batchResult, len(items))}
	var down error // MySQL stopped answering: the rest are not attempted
	for i := range items {
		r := &out.Results[i]
		err := bad[i]
		if err == nil && down != nil {
			err = down
		}
		if err == nil {
			k := ""
			if itemKey != nil {
				k = itemKey(i)
			}
			var l shortener.Link
			var replayed bool
			l, replayed, err = h.createLink(ctx, reqs[i], k, scope, caller.Owner)
			switch {
			case err == nil && replayed && l.Gone(h.d.Now()):
				err = errGone // as a single create's replay of a link deleted since
			case err == nil:
				lr := h.response(l)
				r.Status, r.Link = http.StatusCreated, &lr
				continue
			case errors.Is(err, shortener.ErrUnavailable):
				down = err
			}
		}
		e := toHTTP(err)
		d := detailOf(e)
		r.Status, r.Error = e.Status(), &d
	}
	return c.JSON(http.StatusOK, out)
}

// decodeBatch reads a batch's body: a JSON object with one member,
// links, an array of 1 to 1,000 values. Anything else is the whole
// batch's 400; each value is decoded later as a link of its own.
func (h *Handler) decodeBatch(c echo.Context) ([]json.RawMessage, error) {
	if !isJSON(c.Request().Header.Get(echo.HeaderContentType)) {
		return nil, &Error{Code: CodeMediaType, Message: "send the body as JSON with Content-Type: application/json"}
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, maxBatchBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, badJSON("request body could not be read")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, badJSON(`request body is empty; send {"links": [...]}`)
	}
	var req batchRequest
	if err := decodeObject(body, &req); err != nil {
		return nil, err
	}
	var items []json.RawMessage
	if req.Links == nil || json.Unmarshal(req.Links, &items) != nil || items == nil {
		return nil, &Error{Code: CodeInvalidJSON, Field: "links", Message: `field "links" must be an array of links to create`}
	}
	if len(items) == 0 || len(items) > maxBatch {
		return nil, fieldErrorf(CodeInvalidRequest, "links", "a batch holds 1 to %d links, got %d", maxBatch, len(items))
	}
	return items, nil
}

// batchHash fingerprints a batch's links as sent, each compacted (so
// whitespace does not count), under the server secret: the links may
// hold passwords, which the idempotency table must not hold a fast hash
// of.
func (h *Handler) batchHash(items []json.RawMessage) string {
	m := hmac.New(sha256.New, append([]byte("shortener: batch request\x00"), h.cookieSecret...))
	var buf bytes.Buffer
	for _, raw := range items {
		buf.Reset()
		if json.Compact(&buf, raw) != nil {
			buf.Write(raw)
		}
		m.Write([]byte(strconv.Itoa(buf.Len()) + ":"))
		m.Write(buf.Bytes())
	}
	return hex.EncodeToString(m.Sum(nil))
}

// takeCreates counts n creates against the caller's create limit, as
// createLimit counts one: this instance's bucket must hold n tokens and
// the shared bucket must not have refused the key. A batch larger than
// the burst could never pass: 400, not 429.
func (h *Handler) takeCreates(c echo.Context, local *localLimiter, n int) error {
	caller := callerOf(c)
	key, r, burst, who := "addr:"+clientKey(c.RealIP()), h.cfg.CreateRate, h.cfg.CreateBurst, "this address"
	if caller.Keyed() {
		key, r, burst, who = "key:"+caller.Owner, h.cfg.KeyCreateRate, h.cfg.KeyCreateBurst, "this API key"
	}
	if r <= 0 {
		return nil
	}
	if n > burst {
		return fieldErrorf(CodeInvalidRequest, "links", "%s may create at most %d links at once; send batches of at most %d", who, burst, burst)
	}
	wait, refused := time.Duration(0), false
	if h.d.Limiter != nil {
		wait, refused = h.d.Limiter.Refused(key)
	}
	if !refused {
		var ok bool
		if ok, wait = local.allowN(key, r, burst, n); ok {
			if h.d.Limiter != nil {
				for range n {
					h.d.Limiter.Take(key, r, burst)
				}
			}
			return nil
		}
	}
	retry := strconv.Itoa(max(1, int(math.Ceil(wait.Seconds()))))
	c.Response().Header().Set("Retry-After", retry)
	return &Error{Code: CodeRateLimited, Message: "a batch of " + strconv.Itoa(n) + " links is more than " + who + " may create now; retry after " + retry + " s"}
}

// allowN is allow for n requests at once: all of them, or none.
func (l *localLimiter) allowN(key string, r float64, burst, n int) (bool, time.Duration) {
	b, _ := l.buckets.Compute(key, func(old *rate.Limiter, found bool) (*rate.Limiter, otter.ComputeOp) {
		if found {
			return old, otter.CancelOp
		}
		return rate.NewLimiter(rate.Limit(r), burst), otter.WriteOp
	})
	res := b.ReserveN(time.Now(), n)
	if !res.OK() {
		return false, time.Duration(float64(n) / r * float64(time.Second))
	}
	if d := res.Delay(); d > 0 {
		res.Cancel()
		return false, d
	}
	return true, 0
}
