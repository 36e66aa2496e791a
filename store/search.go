package store

import (
	"context"
	"fmt"
	"math"
	"shortener"
	"strings"
	"time"
)

// SearchLinks returns one page of owner's links, deleted links left out:
// up to limit of them past cursor (an ID; 0: from the first), newest
// first (IDs below cursor, descending) or with oldest the other way,
// that match every filter given:
//   - match ("": any) is a substring of the code (as written: codes are
//     case-sensitive) or of the URL (in any letter case);
//   - tag ("": any) is one of the link's tags;
//   - created after from and before to (zero: unbounded), both exclusive.
//
// The query walks links_owner (owner, id) from the cursor in ID order and
// stops once it has a page, so a page costs the links read until limit
// match: a filter that matches rarely reads up to all of the owner's
// links, never another owner's. Its deadline is the query timeout.
func (s *Store) SearchLinks(ctx context.Context, owner, match, tag string, from, to time.Time, cursor int64, oldest bool, limit int) ([]shortener.Link, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	q, args := searchQuery(owner, match, tag, from, to, cursor, oldest, limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("search links: %w: %w", shortener.ErrUnavailable, err)
	}
	defer rows.Close()
	out := []shortener.Link{}
	for rows.Next() {
		l, err := scanLink(rows)
		if err != nil {
			return nil, fmt.Errorf("search links: %w: %w", shortener.ErrUnavailable, err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search links: %w: %w", shortener.ErrUnavailable, err)
	}
	return out, nil
}

// searchQuery is SearchLinks' statement and its arguments.
func searchQuery(owner, match, tag string, from, to time.Time, cursor int64, oldest bool, limit int) (string, []any) {
	var q strings.Builder
	q.WriteString("SELECT " + linkColumns + " FROM links WHERE owner = ? AND deleted_at IS NULL")
	args := []any{owner}
	switch {
	case oldest:
		q.WriteString(" AND id > ?")
		if cursor == 0 {
			cursor = math.MinInt64
		}
	default:
		q.WriteString(" AND id < ?")
		if cursor == 0 {
			cursor = math.MaxInt64
		}
	}
	args = append(args, cursor)
	switch {
	case match == "":
	case isASCII(match):
		// URLs are stored in ASCII (handler.URLPolicy), so LOWER and
		// strings.ToLower agree on them.
		q.WriteString(" AND (code LIKE ? ESCAPE '!' OR LOWER(url) LIKE ? ESCAPE '!')")
		args = append(args, "%"+escapeLike(match)+"%", "%"+escapeLike(strings.ToLower(match))+"%")
	default:
		// Codes and URLs are ASCII: nothing holds this text (and the
		// ascii code column cannot even be compared with it).
		q.WriteString(" AND FALSE")
	}
	if tag != "" {
		// The tags column holds each tag between spaces (joinTags).
		q.WriteString(" AND tags LIKE ? ESCAPE '!'")
		args = append(args, "% "+escapeLike(tag)+" %")
	}
	if !from.IsZero() {
		q.WriteString(" AND created_at > ?")
		args = append(args, from.UTC())
	}
	if !to.IsZero() {
		q.WriteString(" AND created_at < ?")
		args = append(args, to.UTC())
	}
	if oldest {
		q.WriteString(" ORDER BY id ASC LIMIT ?")
	} else {
		q.WriteString(" ORDER BY id DESC LIMIT ?")
	}
	return q.String(), append(args, limit)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// escapeLike makes s match itself only in a LIKE pattern with ESCAPE '!':
// '%' and '_' are wildcards, and '!' the escape. ('!' rather than the
// default backslash, whose meaning in a literal depends on the server's
// NO_BACKSLASH_ESCAPES.)
func escapeLike(s string) string {
	return strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace(s)
}
