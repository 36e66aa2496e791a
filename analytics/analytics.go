// Package analytics turns a redirect's request into the click's
// analytics dimensions (Dims): the client's country, its browser, OS and
// device class, and a visitor hash for counting unique visitors, plus the
// HyperLogLog sketch (Sketch) those hashes are counted in. Journaling,
// shipping and the stats are the click packages'; this package only
// derives, and imports nothing of ours but the shared setting error.
//
// Its rules:
//   - Enrich runs on every redirect: no I/O and no allocation once the
//     User-Agent string is in the cache (a walk of the country database
//     mapped in memory, a cache lookup, one SHA-256 of 64 bytes).
//   - No client address leaves Enrich: a click carries its country and a
//     keyed hash of the address and the User-Agent, whose key changes
//     every UTC day and is deleted two days later, so neither can be
//     turned back into an address.
//   - Every instance hashes a visitor alike: the day's key comes from a
//     KeySource shared by all (MySQL), fetched in the background. While
//     it cannot be had, the instance uses a key of its own for the day
//     and says so (shortener_analytics_visitor_key_local); that day's
//     unique visitors may then be over-counted, a visitor seen by two
//     instances counting twice.
//   - One switch (Config.Enabled) turns it all off: nothing is parsed,
//     looked up or hashed, and a click carries only its bot verdict.
package analytics

import (
	"context"
	"errors"
	"net/netip"
	"shortener"
	"sync"
	"sync/atomic"
	"time"
)

// Config is the analytics settings.
type Config struct {
	// Enabled turns the derivation on. false is the privacy switch:
	// Enrich returns Dims with the country unknown, the browser and OS
	// other, the device desktop or bot (from the redirect's bot verdict
	// only) and no visitor, and nothing is parsed, opened or fetched.
	Enabled bool
	// GeoDB is the path of an MMDB country database: DB-IP's Lite
	// country, MaxMind's GeoLite2-Country, or ip-location-db's files. ""
	// is the default database make geo installs (GeoDBPath, relative to
	// the working directory); "none" derives no country.
	GeoDB string
	// AgentCacheSize is how many User-Agent strings keep their parse.
	AgentCacheSize int
}

// Validate reports every setting New cannot work with, each a
// *shortener.SettingError naming its field. Whether the database exists
// is New's to find.
func (c Config) Validate() error {
	var errs []error
	if c.Enabled && c.AgentCacheSize <= 0 {
		errs = append(errs, shortener.Invalid("AgentCacheSize", "must be positive, got %d", c.AgentCacheSize))
	}
	return errors.Join(errs...)
}

// Enricher derives clicks' Dims. Enrich is safe for concurrent use;
// Close stops it, after the last Enrich.
type Enricher struct {
	cfg    Config
	keys   KeySource
	now    func() time.Time
	geo    *geo        // nil: no country
	agents *agentCache // nil when disabled

	ring        atomic.Pointer[keyring] // the visitor keys held
	mu          sync.Mutex              // serialises changes to ring
	fetchErrors atomic.Uint64

	stop      context.CancelFunc
	done      chan struct{} // closed when the key loop has returned
	closeOnce sync.Once
	closeErr  error
}

// New returns an Enricher. It opens the country database and starts
// fetching visitor keys from keys in the background (so keys must answer
// for as long as the Enricher runs); now is the clock, time.Now outside
// tests. Disabled (cfg.Enabled false), it opens nothing, starts nothing,
// and keys may be nil.
func New(cfg Config, keys KeySource, now func() time.Time) (*Enricher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if now == nil {
		return nil, errors.New("analytics: New needs a clock")
	}
	e := &Enricher{cfg: cfg, keys: keys, now: now, stop: func() {}, done: make(chan struct{})}
	e.ring.Store(&keyring{})
	if !cfg.Enabled {
		close(e.done)
		return e, nil
	}
	if keys == nil {
		return nil, errors.New("analytics: New needs a KeySource")
	}
	var err error
	if e.geo, err = openGeo(cfg.GeoDB); err != nil {
		return nil, err
	}
	if e.agents, err = newAgentCache(cfg.AgentCacheSize); err != nil {
		if e.geo != nil {
			e.geo.close()
		}
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.stop = cancel
	go e.fetchKeys(ctx)
	return e, nil
}

// Enrich returns the Dims of a click from addr (the client's address;
// the zero Addr if unknown), its User-Agent header, the redirect's bot
// verdict (a bot's Device is DeviceBot, whatever its header says) and
// its time (which picks the visitor key's day). It does no I/O, and
// allocates nothing once userAgent's parse is cached.
func (e *Enricher) Enrich(addr netip.Addr, userAgent string, bot bool, at time.Time) Dims {
	var d Dims
	if !e.cfg.Enabled {
		if bot {
			d.Agent.Device = DeviceBot
		}
		return d
	}
	addr = addr.Unmap() // an IPv4 client of a dual-stack socket is an IPv4 address
	if e.geo != nil && addr.IsValid() {
		d.Country = e.geo.country(addr)
	}
	a := e.agents.lookup(userAgent)
	d.Agent = a.agent
	if bot {
		d.Agent.Device = DeviceBot
	}
	if addr.IsValid() {
		d.Visitor = visitorHash(&e.keyFor(dayOf(at)).key, addr, &a.digest)
	}
	return d
}

// Close stops the key loop and closes the country database. Enrich must
// not be called after it.
func (e *Enricher) Close() error {
	e.closeOnce.Do(func() {
		e.stop()
		<-e.done
		if e.agents != nil {
			e.agents.close()
		}
		if e.geo != nil {
			e.closeErr = e.geo.close()
		}
	})
	return e.closeErr
}
