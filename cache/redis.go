package cache

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"shortener"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"shortener/sentinel"
)

// Breaker and role names, used in metrics and logs.
const (
	breakerRead  = "read"  // lookups, served by the replicas
	breakerWrite = "write" // fills, deletes and messages, sent to the master
	roleReplica  = "replica"
)

// Links in Redis: one string per code, under key(code), written by
// setLink and read by lookupRedis, in the format of encode.

// key is the Redis key of a code.
func key(code string) string { return "link:" + code }

// tombKey is the key of a code's tombstone: the code was deleted, and no
// fill may write it (fill.go).
func tombKey(code string) string { return "gone:" + code }

// fillScript writes links where no tombstone is. KEYS: a link key and its
// tombstone key per link. ARGV[1]: the invalidation channel; then per
// link: the value, the TTL in milliseconds, and the code to announce or
// "" for none. The codes to announce go out in one message, separated by
// spaces (a code has none). It returns how many links it wrote.
var fillScript = redis.NewScript(`
local written, announce = 0, {}
for i = 1, #KEYS, 2 do
  local a = 2 + (i - 1) / 2 * 3
  if redis.call('EXISTS', KEYS[i + 1]) == 0 then
    redis.call('SET', KEYS[i], ARGV[a], 'PX', ARGV[a + 1])
    written = written + 1
  end
  if ARGV[a + 2] ~= '' then
    announce[#announce + 1] = ARGV[a + 2]
  end
end
if #announce > 0 then
  redis.call('PUBLISH', ARGV[1], table.concat(announce, ' '))
end
return written
`)

// lookupRedis reads code from a replica, in an MGET shared with the
// lookups that reach Redis meanwhile (reads.go), when the read breaker
// allows that MGET; fromRedis counts the outcome.
func (c *Cache) lookupRedis(code string) (shortener.Link, string) {
	began := time.Now()
	val, res, err := c.reads.get(key(code), began)
	if res != resultSkipped {
		c.m.redisWait.Observe(time.Since(began).Seconds())
	}
	if res == resultError {
		c.log.Debug("redis lookup failed", "code", code, "err", err)
	}
	if res != resultHit {
		return shortener.Link{}, res
	}
	l, err := decode(code, val)
	if err != nil {
		// A value this version cannot read is a miss; the fill that
		// follows overwrites it.
		c.log.Warn("undecodable redis entry", "code", code, "err", err)
		return shortener.Link{}, resultMiss
	}
	return l, resultHit
}

// setLinks writes links to the master (the caller holds a permit of the
// write breaker), each for ttl(l), except those
// with a tombstone, in one script call (EVALSHA; EVAL once after a new
// master), announcing on the invalidation channel the codes that announce
// holds true (nil: none). It returns how many it wrote.
func (c *Cache) setLinks(ctx context.Context, links []shortener.Link, ttl func(shortener.Link) time.Duration, announce map[string]bool) (int, error) {
	keys := make([]string, 0, 2*len(links))
	args := make([]any, 0, 1+3*len(links))
	args = append(args, invalidationChannel)
	for _, l := range links {
		code := ""
		if announce[l.Code] {
			code = l.Code
		}
		keys = append(keys, key(l.Code), tombKey(l.Code))
		args = append(args, encode(l), max(1, ttl(l).Milliseconds()), code)
	}
	written, err := sentinel.Run(ctx, c.write, func(ctx context.Context, r *redis.Client) (int64, error) {
		return fillScript.Run(ctx, r, keys, args...).Int64()
	})
	return int(written), err
}

// encode writes a link as
//
//	v2 <redirect> <expires unix ms> <id> <flags> <max visits> <password hash> <url>
//
// with flags "d" for a disabled link ("-" for none) and "-" for no
// password: everything a redirect decides by. The entry carries its own
// expiry, so a stale TTL can never outlive it. The URL is last, so it may
// hold spaces; a bcrypt hash holds none.
func encode(l shortener.Link) string {
	var exp int64
	if !l.ExpiresAt.IsZero() {
		exp = l.ExpiresAt.UnixMilli()
	}
	flags, pw := "-", cmp.Or(l.PasswordHash, "-")
	if l.Disabled {
		flags = "d"
	}
	return "v2 " + strconv.Itoa(l.Redirect) + " " + strconv.FormatInt(exp, 10) + " " + strconv.FormatInt(l.ID, 10) + " " +
		flags + " " + strconv.FormatInt(l.MaxVisits, 10) + " " + pw + " " + l.URL
}

// decode reads an entry encode wrote, or one of the v1 form ("v1
// <redirect> <expires unix ms> <url>") an instance of an earlier version
// wrote during a rolling upgrade: v1 knew no flags, visits or passwords.
func decode(code, val string) (shortener.Link, error) {
	var parts []string
	switch {
	case strings.HasPrefix(val, "v2 "):
		if parts = strings.SplitN(val, " ", 8); len(parts) != 8 {
			return shortener.Link{}, errors.New("v2: too few fields")
		}
	case strings.HasPrefix(val, "v1 "):
		if parts = strings.SplitN(val, " ", 4); len(parts) != 4 {
			return shortener.Link{}, errors.New("v1: too few fields")
		}
	default:
		return shortener.Link{}, errors.New("unknown format")
	}
	redirect, err := strconv.Atoi(parts[1])
	if err != nil {
		return shortener.Link{}, fmt.Errorf("redirect: %w", err)
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return shortener.Link{}, fmt.Errorf("expiry: %w", err)
	}
	l := shortener.Link{Code: code, URL: parts[len(parts)-1], Redirect: redirect}
	if exp != 0 {
		l.ExpiresAt = time.UnixMilli(exp).UTC()
	}
	if parts[0] == "v1" {
		return l, nil
	}
	if l.ID, err = strconv.ParseInt(parts[3], 10, 64); err != nil {
		return shortener.Link{}, fmt.Errorf("id: %w", err)
	}
	switch parts[4] {
	case "d":
		l.Disabled = true
	case "-":
	default:
		return shortener.Link{}, fmt.Errorf("flags %q", parts[4])
	}
	if l.MaxVisits, err = strconv.ParseInt(parts[5], 10, 64); err != nil {
		return shortener.Link{}, fmt.Errorf("max visits: %w", err)
	}
	if parts[6] != "-" {
		l.PasswordHash = parts[6]
	}
	return l, nil
}
