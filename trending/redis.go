package trending

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"shortener/sentinel"
)

// fetch is how many ranked codes a refresh reads per window: the 100 an
// answer may ask for, and room for links that turn out deleted.
const fetch = 128

// applyScript applies one batch atomically, at most once per sequence
// number. KEYS[1] is the node's high-water mark, KEYS[2..] the bucket and
// total keys the batch touches; ARGV[1] is the batch's sequence, ARGV[2]
// the mark's TTL, ARGV[3..#KEYS+1] each key's TTL, then triples of (key
// index, member, amount): a sorted-set increment, or with an empty member
// a total's.
var applyScript = redis.NewScript(`
local hw = redis.call('GET', KEYS[1])
if hw and tonumber(hw) >= tonumber(ARGV[1]) then return 0 end
local nk = #KEYS
for i = nk + 2, #ARGV, 3 do
  local k = KEYS[tonumber(ARGV[i])]
  if ARGV[i + 1] == '' then
    redis.call('INCRBY', k, ARGV[i + 2])
  else
    redis.call('ZINCRBY', k, ARGV[i + 2], ARGV[i + 1])
  end
end
for i = 2, nk do redis.call('EXPIRE', KEYS[i], ARGV[i + 1]) end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return 1
`)

// markTTL is how long Redis remembers a node's last applied batch: longer
// than the oldest bucket lives, so a batch replayed later than that only
// touches expired buckets (load drops such batches anyway).
const markTTL = 27 * time.Hour

// breakerName names trending's breaker in the logs (its metrics have no
// breaker label: they are trending's alone).
const breakerName = "trending"

// call runs one Redis command on the master under its own deadline,
// detached from the caller's cancellation, when the breaker allows it,
// and records the outcome. A miss (redis.Nil) is no error here; errOpen
// means it was not sent.
func (r *Ranking) call(ctx context.Context, fn func(context.Context, *redis.Client) error) error {
	if !r.master.Breaker().Allow() {
		return errOpen
	}
	_, err := sentinel.Run(ctx, r.master, func(ctx context.Context, rdb *redis.Client) (struct{}, error) {
		return struct{}{}, fn(ctx, rdb)
	})
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

var errOpen = errors.New("trending: breaker open")

// apply sends one batch. A nil error means Redis holds the batch's counts
// (now or from an earlier attempt).
func (r *Ranking) apply(ctx context.Context, b *batch) error {
	node := r.cfg.Node
	if b.Node != "" {
		node = b.Node
	}
	keys := []string{r.cfg.Prefix + "seq:" + node}
	ttls := []any{}
	index := map[string]int{}
	keyOf := func(k string, ttl time.Duration) string {
		i, ok := index[k]
		if !ok {
			keys = append(keys, k)
			ttls = append(ttls, int64(ttl/time.Second))
			i = len(keys)
			index[k] = i
		}
		return strconv.Itoa(i)
	}
	type inc struct{ key, member string }
	incs := map[inc]uint64{}
	for s, n := range b.Counts {
		for _, w := range windows() {
			incs[inc{keyOf(w.res.key(r.cfg.Prefix, w.res.ofMinute(s.Minute)), w.res.ttl), s.Code}] += n
		}
		incs[inc{keyOf(totalKey(r.cfg.Prefix, s.Minute), 15*time.Minute), ""}] += n
	}
	args := append([]any{b.Seq, int64(markTTL / time.Second)}, ttls...)
	for i, n := range incs {
		args = append(args, i.key, i.member, n)
	}
	b.Sent = true
	var fresh int64
	err := r.call(ctx, func(ctx context.Context, rdb *redis.Client) error {
		var err error
		fresh, err = applyScript.Run(ctx, rdb, keys, args...).Int64()
		return err
	})
	if err == nil {
		if fresh == 1 {
			r.m.batches.WithLabelValues("applied").Inc()
		} else {
			r.m.batches.WithLabelValues("duplicate").Inc()
		}
	}
	return err
}

// ranked is a window's top codes as Redis counts them.
type ranked struct {
	counts []Count
	from   time.Time
	asOf   time.Time
}

// Reading a window never unions its buckets in Redis: ZUNIONSTORE is
// linear in every member of every bucket, and with a million links
// clicked in an hour it blocked the master for 1.2 s, long enough for
// Sentinel to fail it over (make bench, 2026-12-03). A read instead
// takes each bucket's depth leading members (ZREVRANGE, logarithmic plus
// depth), sums them in the instance, and asks every bucket for the exact
// counts of the exact leading candidates (ZMSCORE). Every count it
// returns is exact; the ranking is exact whenever no bucket holds more
// than depth members, and otherwise misses only a code that is outside
// depth in some bucket yet would rank among the first fetch in total.
const (
	depth = 4 * fetch // members read from each bucket
	exact = 2 * fetch // leading candidates whose counts are read exactly
)

// read reads window w's top codes from Redis (see depth).
func (r *Ranking) read(ctx context.Context, w window, now time.Time) (ranked, error) {
	first := w.first(now)
	keys := make([]string, 0, w.buckets)
	for b := first; b < first+w.buckets; b++ {
		keys = append(keys, w.res.key(r.cfg.Prefix, b))
	}
	var counts []Count
	err := r.call(ctx, func(ctx context.Context, rdb *redis.Client) error {
		tops := make([]*redis.ZSliceCmd, len(keys))
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range keys {
				tops[i] = p.ZRevRangeWithScores(ctx, k, 0, depth-1)
			}
			return nil
		})
		if err != nil {
			return err
		}
		sum := map[string]float64{}
		for _, t := range tops {
			for _, z := range t.Val() {
				code, _ := z.Member.(string)
				sum[code] += z.Score
			}
		}
		counts = make([]Count, 0, len(sum))
		for code, n := range sum {
			counts = append(counts, Count{Key: code, Count: uint64(n)})
		}
		sortCounts(counts)
		counts = counts[:min(len(counts), exact)]
		if len(counts) == 0 {
			return nil
		}
		codes := make([]string, len(counts))
		for i, c := range counts {
			codes[i] = c.Key
		}
		scores := make([]*redis.FloatSliceCmd, len(keys))
		_, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range keys {
				scores[i] = p.ZMScore(ctx, k, codes...)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for i := range counts {
			var n float64
			for _, s := range scores {
				if v := s.Val(); i < len(v) {
					n += v[i]
				}
			}
			counts[i].Count = uint64(n)
		}
		return nil
	})
	if err != nil {
		return ranked{}, fmt.Errorf("read trending %s: %w", w.name, err)
	}
	sortCounts(counts)
	return ranked{counts: counts[:min(len(counts), fetch)], from: w.res.start(first), asOf: now}, nil
}

// totals reads how many clicks every instance sent for the minutes
// [first, last].
func (r *Ranking) totals(ctx context.Context, first, last int64) (uint64, error) {
	keys := make([]string, 0, last-first+1)
	for m := first; m <= last; m++ {
		keys = append(keys, totalKey(r.cfg.Prefix, m))
	}
	var vals []any
	err := r.call(ctx, func(ctx context.Context, rdb *redis.Client) error {
		var err error
		vals, err = rdb.MGet(ctx, keys...).Result()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("read trending totals: %w", err)
	}
	var sum uint64
	for _, v := range vals {
		if s, ok := v.(string); ok {
			n, _ := strconv.ParseUint(s, 10, 64)
			sum += n
		}
	}
	return sum, nil
}

// remove drops codes from every live bucket of every window: links found
// deleted or expired, so they stop taking places in the ranking.
func (r *Ranking) remove(ctx context.Context, codes []string, now time.Time) error {
	members := make([]any, len(codes))
	for i, c := range codes {
		members[i] = c
	}
	return r.call(ctx, func(ctx context.Context, rdb *redis.Client) error {
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, w := range windows() {
				live := int64(w.res.ttl / w.res.width)
				last := w.res.bucket(now)
				for b := last - live; b <= last; b++ {
					p.ZRem(ctx, w.res.key(r.cfg.Prefix, b), members...)
				}
			}
			return nil
		})
		return err
	})
}
