package handler

import (
	"strings"
)

// Alias lengths: long enough not to be guessed by accident, short enough
// to stay a short link.
const (
	minAlias = 3
	maxAlias = 64
)

// validateAlias checks a custom code: 3 to 64 letters, digits, '-' or
// '_', case-sensitive, and not the first segment of a route's path
// (h.reserved) in any letter case, which it would shadow.
func (h *Handler) validateAlias(a string) error {
	bad := func(format string, args ...any) error {
		return fieldErrorf(CodeInvalidAlias, "alias", format, args...)
	}
	if len(a) < minAlias || len(a) > maxAlias {
		return bad("alias must be %d to %d characters, got %d", minAlias, maxAlias, len(a))
	}
	for i := 0; i < len(a); i++ {
		b := a[i]
		if !('0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || b == '-' || b == '_') {
			return bad("alias may hold only letters, digits, '-' and '_'")
		}
	}
	for _, r := range h.reserved {
		if strings.EqualFold(a, r) {
			return bad("alias %q is reserved", a)
		}
	}
	return nil
}
