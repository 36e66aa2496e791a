package handler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// decodeJSON reads exactly one JSON object from a body capped at maxBody
// into v, a pointer to a struct. Go's decoder alone is lenient where a
// client's mistake should be an answer: it matches keys without regard to
// case ({"URL": …} fills url), lets a repeated key silently win, and stops
// after the first value. So the object's keys are checked first, exactly
// as written, each once, with nothing after the object; and the messages
// speak of the API's fields, never of Go types.
//
// The body must be declared JSON (Content-Type: application/json, or a
// +json type): a cross-site page can POST any body with a form (text/plain,
// urlencoded, multipart) or fetch without a type, all without a CORS
// preflight, and a logged-in browser's cookies would go with it. JSON
// needs a preflight, which this server does not grant.
func (h *Handler) decodeJSON(c echo.Context, v any) error {
	if !isJSON(c.Request().Header.Get(echo.HeaderContentType)) {
		return &Error{Code: CodeMediaType,
			Message: "send the body as JSON with Content-Type: application/json"}
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return badJSON("request body could not be read")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return badJSON("request body is empty; send a JSON object")
	}
	return decodeObject(body, v)
}

// decodeObject decodes body, one JSON object, into v, a pointer to a
// struct, as strictly as decodeJSON says: a request's body, or one object
// of a batch.
func decodeObject(body []byte, v any) error {
	fields := jsonFields(v)
	names, raws, err := checkObject(body, fields)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		// Name the first field whose value does not fit, in the API's
		// words, whatever the type's own decoder said.
		for _, name := range names {
			if json.Unmarshal(raws[name], reflect.New(fields[name]).Interface()) != nil {
				return badJSON(fmt.Sprintf("field %q must be %s", name, jsonKind(fields[name])))
			}
		}
		return badJSON(decodeMessage(err))
	}
	return nil
}

// isJSON reports whether a Content-Type header names JSON.
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == echo.MIMEApplicationJSON || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

func badJSON(msg string) error { return &Error{Code: CodeInvalidJSON, Message: msg} }

// checkObject walks the top level of body: one object whose keys are all in
// fields, exactly as spelled, each once, and then the end of the body. It
// returns the keys in order and their raw values.
func checkObject(body []byte, fields map[string]reflect.Type) ([]string, map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil {
		return nil, nil, badJSON(decodeMessage(err))
	} else if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, badJSON("request body must be a JSON object")
	}
	var names []string
	raws := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, badJSON(decodeMessage(err))
		}
		name, _ := tok.(string)
		_, known := fields[name]
		switch _, seen := raws[name]; {
		case seen:
			return nil, nil, badJSON(fmt.Sprintf("field %q appears more than once", name))
		case !known:
			for f := range fields {
				if strings.EqualFold(f, name) {
					return nil, nil, badJSON(fmt.Sprintf("unknown field %q; field names are case-sensitive: use %q", name, f))
				}
			}
			return nil, nil, badJSON(fmt.Sprintf("unknown field %q", name))
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, badJSON(decodeMessage(err))
		}
		names, raws[name] = append(names, name), raw
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, nil, badJSON(decodeMessage(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, nil, badJSON("request body has data after the JSON object")
	}
	return names, raws, nil
}

// jsonFields maps the JSON names of the fields of the struct v points to
// to their types.
func jsonFields(v any) map[string]reflect.Type {
	t := reflect.TypeOf(v).Elem()
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = t.Field(i).Type
		}
	}
	return out
}

// decodeMessage says what is wrong with a body in the API's terms.
func decodeMessage(err error) string {
	var (
		se *json.SyntaxError
		te *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("request body is not valid JSON (at byte %d)", se.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "request body ends before the JSON object does"
	case errors.As(err, &te):
		return fmt.Sprintf("field %q must be %s", te.Field, jsonKind(te.Type))
	}
	return "request body does not match the request's schema"
}

// jsonKind names what a Go type holds in JSON's words.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeOf(time.Time{}):
		return "an RFC 3339 time, e.g. 2027-01-31T23:59:59Z"
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Float64:
		return "a whole number"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		return "an array of strings"
	}
	return "of another type"
}
