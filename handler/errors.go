package handler

import (
	"errors"
	"log/slog"
	"net/http"
	"shortener"
	"strconv"

	"github.com/labstack/echo/v4"
)

// Stable error codes clients can switch on.
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
	CodeTooLarge         = "request_too_large"
	CodeMediaType        = "unsupported_media_type"
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeKeyReused        = "idempotency_key_reused"
	CodeNotFound         = "not_found"
	CodeGone             = "gone"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeUnavailable      = "unavailable"
	CodeInternal         = "internal"
)

// Error is an error with the HTTP status and stable code to answer with.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// errGone marks a link that expired or was deleted.
var errGone = errors.New("handler: link gone")

// mapping turns the errors of the layers below into answers. It is the
// one place where errors become HTTP; order matters (first match wins).
var mapping = []struct {
	err error
	out Error
}{
	{shortener.ErrNotFound, Error{http.StatusNotFound, CodeNotFound, "no link has this code"}},
	{errGone, Error{http.StatusGone, CodeGone, "this link has expired or was deleted"}},
	{shortener.ErrGone, Error{http.StatusGone, CodeGone, "this link has expired or was deleted"}},
	{shortener.ErrKeyReused, Error{http.StatusUnprocessableEntity, CodeKeyReused, "this Idempotency-Key was used for a different request"}},
	{shortener.ErrUnavailable, Error{http.StatusServiceUnavailable, CodeUnavailable, "the service cannot reach its database; retry shortly"}},
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
		switch ee.Code {
		case http.StatusNotFound:
			return Error{ee.Code, CodeNotFound, "no such route"}
		case http.StatusMethodNotAllowed:
			return Error{ee.Code, CodeMethodNotAllowed, "method not allowed on this route"}
		case http.StatusRequestEntityTooLarge:
			return Error{ee.Code, CodeTooLarge, "request body too large"}
		}
		if ee.Code < 500 {
			return Error{ee.Code, CodeInvalidRequest, http.StatusText(ee.Code)}
		}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return Error{http.StatusRequestEntityTooLarge, CodeTooLarge, "request body exceeds " + strconv.FormatInt(mbe.Limit, 10) + " bytes"}
	}
	return Error{http.StatusInternalServerError, CodeInternal, "internal error"}
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
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
	if out.Status >= 500 {
		level = slog.LevelError
	}
	h.log.Log(c.Request().Context(), level, "request failed",
		"method", c.Request().Method, "path", c.Request().URL.Path,
		"status", out.Status, "code", out.Code, "err", err,
		"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
	if out.Status == http.StatusServiceUnavailable {
		c.Response().Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	var body errorBody
	body.Error.Code, body.Error.Message = out.Code, out.Message
	if c.Request().Method == http.MethodHead {
		err = c.NoContent(out.Status)
	} else if h.site != nil && h.htmlError(c) {
		err = h.errorPage(c, out) // a browser gets a page (web.go)
	} else {
		err = c.JSON(out.Status, body)
	}
	if err != nil {
		h.log.Warn("write error response", "err", err)
	}
}
