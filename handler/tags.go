package handler

import (
	"slices"
	"strings"
)

// Tag rules: an owner's labels for its links, kept in one column with
// each tag between spaces (store), so a tag is a word of [a-z0-9_-] and
// a link has few of them.
const (
	maxTagLen = 32
	maxTags   = 10
)

// normalizeTag lower-cases t and reports whether it is a tag: 1 to 32 of
// [a-z0-9_-].
func normalizeTag(t string) (string, bool) {
	t = strings.ToLower(t)
	if t == "" || len(t) > maxTagLen {
		return t, false
	}
	for i := 0; i < len(t); i++ {
		b := t[i]
		if !('a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '-' || b == '_') {
			return t, false
		}
	}
	return t, true
}

// normalizeTags returns tags lower-cased, deduplicated and sorted, or an
// error about field "tags": every tag must be valid (normalizeTag), and
// there may be at most 10 once duplicates are gone. None is nil.
func normalizeTags(tags []string) ([]string, error) {
	var out []string
	for _, t := range tags {
		n, ok := normalizeTag(t)
		if !ok {
			return nil, fieldErrorf(CodeInvalidRequest, "tags", "tag %q must be 1 to %d of a-z, 0-9, '-' and '_'", t, maxTagLen)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > maxTags {
		return nil, fieldErrorf(CodeInvalidRequest, "tags", "a link has at most %d tags, got %d", maxTags, len(out))
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// splitTags reads a list of tags written as one text field (an import's
// tags column): separated by spaces, commas, semicolons or '|', the
// separators other shorteners' exports use. No tag can hold any of them.
func splitTags(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ';' || r == '|' || r == ' ' || r == '\t'
	})
}
