package handler

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"shortener"
	"strconv"

	"github.com/labstack/echo/v4"
)

// Stable error codes clients can switch on. Each has one HTTP status,
// in statusOf; an error is built with its code alone.
const (
	CodeInvalidURL       = "invalid_url"
	CodeURLTooLong       = "url_too_long"
	CodeURLControlChars  = "url_control_chars"
	CodeURLScheme        = "url_scheme"
	CodeURLCredentials   = "url_credentials"
	CodeURLLoop          = "url_loop"
	CodeURLDenied        = "url_denied"
	CodeInvalidAlias     = "invalid_alias"
	CodeAliasTaken       = "alias_taken"
	CodeRateLimited      = "rate_limited"
	CodeInvalidJSON      = "invalid_json"
	CodeInvalidRequest   = "invalid_request"
	CodeCrossOrigin      = "cross_origin"
	CodeTooLarge         = "request_too_large"
	CodeMediaType        = "unsupported_media_type"
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeKeyReused        = "idempotency_key_reused"
	CodeWebhookLimit     = "webhook_limit"
	CodeNotFound         = "not_found"
	CodeGone             = "gone"
	CodeDisabled         = "disabled"
	CodeExhausted        = "visits_exhausted"
	CodePasswordRequired = "password_required"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeUnavailable      = "unavailable"
	CodeInternal         = "internal"
)

// statusOf is the one map from an error code to its HTTP status.
// TestOpenAPICoversRoutes checks that openapi.json lists every code.
var statusOf = map[string]int{
	CodeInvalidURL:       http.StatusBadRequest,
	CodeURLTooLong:       http.StatusBadRequest,
	CodeURLControlChars:  http.StatusBadRequest,
	CodeURLScheme:        http.StatusBadRequest,
	CodeURLCredentials:   http.StatusBadRequest,
	CodeURLLoop:          http.StatusBadRequest,
	CodeURLDenied:        http.StatusBadRequest,
	CodeInvalidAlias:     http.StatusBadRequest,
	CodeAliasTaken:       http.StatusConflict,
	CodeRateLimited:      http.StatusTooManyRequests,
	CodeInvalidJSON:      http.StatusBadRequest,
	CodeInvalidRequest:   http.StatusBadRequest,
	CodeCrossOrigin:      http.StatusForbidden,
	CodeTooLarge:         http.StatusRequestEntityTooLarge,
	CodeMediaType:        http.StatusUnsupportedMediaType,
	CodeUnauthorized:     http.StatusUnauthorized,
	CodeForbidden:        http.StatusForbidden,
	CodeKeyReused:        http.StatusUnprocessableEntity,
	CodeWebhookLimit:     http.StatusConflict,
	CodeNotFound:         http.StatusNotFound,
	CodeGone:             http.StatusGone,
	CodeDisabled:         http.StatusGone,
	CodeExhausted:        http.StatusGone,
	CodePasswordRequired: http.StatusUnauthorized,
	CodeMethodNotAllowed: http.StatusMethodNotAllowed,
	CodeUnavailable:      http.StatusServiceUnavailable,
	CodeInternal:         http.StatusInternalServerError,
}

// Error is an answer to a request that failed: a stable code (its HTTP
// status is statusOf[Code]), the request field at fault when there is
// one (the JSON name: "url", "alias", "redirect", "expires_at"), and a
// message for people.
type Error struct {
	Code    string
	Field   string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Status is the HTTP status e is answered with.
func (e Error) Status() int {
	if s, ok := statusOf[e.Code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// errorf builds an Error with code and no field.
func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// fieldErrorf builds an Error about one request field.
func fieldErrorf(code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// errGone marks a link that expired or was deleted.
var errGone = errors.New("handler: link gone")

// errDisabled marks a link its owner turned off.
var errDisabled = errors.New("handler: link disabled")

// errPasswordRequired marks a password-protected link asked for without
// its password (or with a wrong one).
var errPasswordRequired = errors.New("handler: link password required")

// mapping turns the errors of the layers below into answers. It is the
// one place where errors become HTTP; order matters (first match wins).
var mapping = []struct {
	err error
	out Error
}{
	{shortener.ErrNotFound, Error{Code: CodeNotFound, Message: "no link has this code"}},
	{errGone, Error{Code: CodeGone, Message: "this link has expired or was deleted"}},
	{shortener.ErrGone, Error{Code: CodeGone, Message: "this link has expired or was deleted"}},
	{errDisabled, Error{Code: CodeDisabled, Message: "this link's owner has disabled it"}},
	{shortener.ErrExhausted, Error{Code: CodeExhausted, Message: "this link has had its maximum visits"}},
	{errPasswordRequired, Error{Code: CodePasswordRequired, Message: "this link is password-protected: open it in a browser and enter its password"}},
	{shortener.ErrKeyReused, Error{Code: CodeKeyReused, Message: "this Idempotency-Key was used for a different request"}},
	{shortener.ErrUnavailable, Error{Code: CodeUnavailable, Message: "the service cannot reach its database; retry shortly"}},
	{shortener.ErrWebhookNotFound, Error{Code: CodeNotFound, Message: "this key has no webhook with this ID"}},
	{shortener.ErrWebhookLimit, Error{Code: CodeWebhookLimit, Message: "this key has as many webhooks as it may: delete one first"}},
}

// echoCodes names the statuses Echo answers by itself.
var echoCodes = map[int]Error{
	http.StatusNotFound:              {Code: CodeNotFound, Message: "no such route"},
	http.StatusMethodNotAllowed:      {Code: CodeMethodNotAllowed, Message: "method not allowed on this route"},
	http.StatusRequestEntityTooLarge: {Code: CodeTooLarge, Message: "request body too large"},
	http.StatusUnsupportedMediaType:  {Code: CodeMediaType, Message: "unsupported media type"},
	http.StatusUnauthorized:          {Code: CodeUnauthorized, Message: "unauthorized"},
	http.StatusForbidden:             {Code: CodeForbidden, Message: "forbidden"},
	http.StatusTooManyRequests:       {Code: CodeRateLimited, Message: "too many requests"},
}

// retryAfter is the Retry-After sent with 503s, in seconds.
const retryAfter = 1

// toHTTP maps any error to its answer.
func toHTTP(err error) Error {
	var he *Error
	if errors.As(err, &he) {
		return *he
	}
	for _, m := range mapping {
		if errors.Is(err, m.err) {
			return m.out
		}
	}
	var ee *echo.HTTPError
	if errors.As(err, &ee) {
		if out, ok := echoCodes[ee.Code]; ok {
			return out
		}
		if ee.Code < 500 {
			return Error{Code: CodeInvalidRequest, Message: http.StatusText(ee.Code)}
		}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return Error{Code: CodeTooLarge, Message: "request body exceeds " + strconv.FormatInt(mbe.Limit, 10) + " bytes"}
	}
	return Error{Code: CodeInternal, Message: "internal error"}
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Field   string `json:"field,omitempty"`
		Message string `json:"message"`
	} `json:"error"`
}

// handleError is Echo's HTTPErrorHandler: every error answer goes through
// it, clients get the code and message, logs get the whole chain.
func (h *Handler) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	out := toHTTP(err)
	level := slog.LevelDebug
	if out.Status() >= 500 {
		level = slog.LevelError
	}
	h.log.Log(c.Request().Context(), level, "request failed",
		"method", c.Request().Method, "path", c.Request().URL.Path,
		"status", out.Status(), "code", out.Code, "err", err,
		"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
	if out.Status() == http.StatusServiceUnavailable {
		c.Response().Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	var body errorBody
	body.Error.Code, body.Error.Field, body.Error.Message = out.Code, out.Field, out.Message
	if c.Request().Method == http.MethodHead {
		err = c.NoContent(out.Status())
	} else if h.site != nil && h.htmlError(c) {
		err = h.errorPage(c, out) // a browser gets a page (web.go)
	} else {
		err = c.JSON(out.Status(), body)
	}
	if err != nil {
		h.log.Warn("write error response", "err", err)
	}
}
